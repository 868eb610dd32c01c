package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	agentNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	providerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	knownParams    = map[string]bool{
		"temperature": true, "top_p": true, "top_k": true, "max_tokens": true, "stop": true,
		"presence_penalty": true, "frequency_penalty": true, "seed": true, "response_format": true,
		"tool_choice": true, "extra": true, "playback": true,
	}
	knownKinds = map[string]bool{KindLLM: true, KindChain: true, KindRouter: true, KindParallel: true, KindProxy: true, KindToolbox: true,
		KindEvaluatorOptimizer: true, KindOrchestrator: true}
)

func (p *parser) validate(c *Config) {
	if c.Name == "" {
		p.addPath([]string{"name"}, "is required")
	}
	p.validateListeners(c)
	p.validateHTTP(c)
	p.validateAuth(c)
	p.validateModels(c)
	p.validateServers(c)
	p.validateOAuth(c)
	p.validatePolicy(c)
	p.validateQuotas(c)
	p.validateTracing(c)
	for _, name := range sortedKeys(c.Agents) {
		p.validateAgent(c, c.Agents[name])
	}
	p.validateCycles(c)
	p.checkDeadRules(c)
}

func (p *parser) validateListeners(c *Config) {
	_, lport, err := net.SplitHostPort(c.Listen)
	mainPort, perr := strconv.Atoi(lport)
	if err != nil || perr != nil || mainPort < 0 || mainPort > 65535 {
		p.addPath([]string{"listen"}, fmt.Sprintf("invalid address %q (want host:port)", c.Listen))
	}
	owner := map[int]string{}
	if mainPort > 0 {
		owner[mainPort] = "listen"
	}
	claim := func(port int, who string, key []string) {
		if port == 0 {
			return
		}
		if port < 1 || port > 65535 {
			p.addPath(key, fmt.Sprintf("port %d out of range 1-65535", port))
			return
		}
		if prev, ok := owner[port]; ok {
			p.addPath(key, fmt.Sprintf("port %d is already used by %s", port, prev))
			return
		}
		owner[port] = who
	}
	claim(c.RegistryPort, "registry_port", []string{"registry_port"})
	for _, name := range sortedKeys(c.Agents) {
		claim(c.Agents[name].Port, "agent "+name, []string{"agents", name, "port"})
	}
}

// checkPort reports an http(s) URL whose port is not 1–65535
// ("http://127.0.0.1:99999/mcp" parses, and fails only when dialled).
func (p *parser) checkPort(path []string, u *url.URL) {
	port := u.Port()
	if port == "" && !strings.HasSuffix(u.Host, ":") {
		return // the scheme's default
	}
	switch n, err := strconv.Atoi(port); {
	case port == "":
		p.addPath(path, "no port after the host's colon")
	case err != nil || n < 1 || n > 65535:
		p.addPath(path, fmt.Sprintf("port %s out of range 1-65535", port))
	}
}

func (p *parser) validateHTTP(c *Config) {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.addPath([]string{"public_url"}, "must be an absolute http(s) URL")
		} else {
			p.checkPort([]string{"public_url"}, u)
		}
	}
	for i, cidr := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			if _, err := netip.ParseAddr(cidr); err != nil {
				p.addPath([]string{"trusted_proxies", strconv.Itoa(i)}, fmt.Sprintf("%q is not a CIDR or IP address", cidr))
			}
		}
	}
	for i, o := range c.AllowedOrigins {
		u, err := url.Parse(o)
		if o != "*" && (err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/")) {
			p.addPath([]string{"allowed_origins", strconv.Itoa(i)}, fmt.Sprintf("%q is not an origin (scheme://host[:port])", o))
		}
	}
	if c.StateKey != "" {
		if k, err := base64.StdEncoding.DecodeString(c.StateKey); err != nil || len(k) != 32 {
			p.addPath([]string{"state_key"}, "must be 32 bytes in base64 (openssl rand -base64 32)")
		}
	}
}

func (p *parser) validateAuth(c *Config) {
	switch c.Auth.Mode {
	case "passthrough", "tokens":
		if c.Auth.JWT != nil {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: auth.jwt: ignored unless auth.mode is jwt", p.file, lineOf(p.root, []string{"auth", "jwt"})))
		}
	case "jwt":
		p.validateJWT(c.Auth.JWT)
	default:
		p.addPath([]string{"auth", "mode"}, fmt.Sprintf("unknown mode %q (want passthrough, tokens or jwt)", c.Auth.Mode))
	}
	if c.Auth.Mode == "tokens" && len(c.Auth.Tokens) == 0 {
		p.addPath([]string{"auth", "tokens"}, "mode tokens needs at least one token")
	}
	seen := map[string]bool{}
	values := map[[sha256.Size]byte]int{} // token digest → first index
	for i, t := range c.Auth.Tokens {
		key := []string{"auth", "tokens", strconv.Itoa(i)}
		if t.Name == "" {
			p.addPath(append(key, "name"), "is required")
		} else if seen[t.Name] {
			p.addPath(append(key, "name"), fmt.Sprintf("duplicate token name %q", t.Name))
		}
		seen[t.Name] = true
		v := t.Token.Value()
		switch {
		case v == "":
			p.addPath(append(key, "token"), "is required")
		case strings.HasPrefix(v, "sha256:"):
			if h := strings.TrimPrefix(v, "sha256:"); len(h) != 64 || !isHex(h) {
				p.addPath(append(key, "token"), "sha256: form needs 64 hex digits")
			}
		case len(v) < 16:
			p.addPath(append(key, "token"), "plain tokens must be at least 16 characters")
		}
		// The same token for two callers would make one of them the
		// other; serve refuses it, so validate does.
		if d, ok := tokenDigest(v); ok {
			if first, dup := values[d]; dup {
				p.addPath(append(key, "token"), fmt.Sprintf("same token as auth.tokens.%d (%s)", first, c.Auth.Tokens[first].Name))
			} else {
				values[d] = i
			}
		}
		p.checkGlobs(append(key, "agents"), t.Agents)
	}
}

func (p *parser) validateModels(c *Config) {
	p.checkModel(c, []string{"models", "default"}, c.Models.Default)
	for ref := range c.Models.Capabilities {
		if prov, m := SplitModel(ref); prov == "" || m == "" {
			p.addPath([]string{"models", "capabilities", ref}, "keys are provider.model")
		}
	}
	for _, name := range sortedKeys(c.Models.Providers) {
		p.validateProvider(c, name, c.Models.Providers[name])
	}
}

// validateProvider checks one models.providers entry.
func (p *parser) validateProvider(c *Config, name string, pr *Provider) {
	key := []string{"models", "providers", name}
	if !providerNameRE.MatchString(name) || name == "builtin" {
		p.addPath(key, "provider names are letters, digits, '_' and '-' (no '.': models are <provider>.<model>), at most 64, not builtin")
	}
	switch pr.Type {
	case ProviderOpenAI, ProviderAnthropic:
	case "":
		p.addPath(key, fmt.Sprintf("provider %q needs a type (openai or anthropic)", name))
		return
	default:
		p.addPath(append(key, "type"), fmt.Sprintf("unknown provider type %q (want openai or anthropic)", pr.Type))
		return
	}
	if u, err := url.Parse(pr.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		p.addPath(append(key, "base_url"), "must be an http(s) URL")
	} else {
		p.checkPort(append(key, "base_url"), u)
	}
	if pr.ForwardInboundAuth && c.Auth.Mode == "tokens" {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: models.providers.%s.forward_inbound_auth: ignored in auth mode tokens (the gateway's token is never forwarded)",
			p.file, lineOf(p.root, append(key, "forward_inbound_auth")), name))
	}
}

// checkModel validates a provider.model reference.
func (p *parser) checkModel(c *Config, key []string, ref string) {
	prov, model := SplitModel(ref)
	switch {
	case prov == "builtin":
	case model == "":
		p.addPath(key, fmt.Sprintf("model %q must be provider.model, passthrough or playback", ref))
	case c.Models.Providers[prov] != nil:
	case prov == ProviderOpenAI || prov == ProviderAnthropic:
		p.addPath(key, fmt.Sprintf("model %q: provider %q has no config under models.providers", ref, prov))
	default:
		p.addPath(key, fmt.Sprintf("model %q: unknown provider prefix %q (want one of models.providers: %s)", ref, prov, strings.Join(providerNames(c), ", ")))
	}
}

func (p *parser) validateServers(c *Config) {
	for _, name := range sortedKeys(c.MCP.Servers) {
		s, key := c.MCP.Servers[name], []string{"mcp", "servers", name}
		if s == nil {
			p.addPath(key, "is empty")
			continue
		}
		if !agentNameRE.MatchString(name) || strings.Contains(name, "__") {
			p.addPath(key, "server names are letters, digits, '_', '-', '.' (no '__'), at most 64")
		}
		switch s.Transport {
		case "http", "sse":
			if u, err := url.Parse(s.URL); s.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") {
				p.addPath(append(key, "url"), "transport "+s.Transport+" needs an http(s) url")
			} else {
				p.checkPort(append(key, "url"), u)
			}
		case "stdio":
			if s.Command == "" {
				p.addPath(append(key, "command"), "transport stdio needs a command")
			}
		default:
			p.addPath(append(key, "transport"), fmt.Sprintf("unknown transport %q (want http, sse or stdio)", s.Transport))
		}
		p.validateScope(s, key)
		switch {
		case s.ForwardInboundAuth && c.Auth.Mode == "tokens":
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: mcp.servers.%s.forward_inbound_auth: ignored in auth mode tokens (the gateway's token is never forwarded)",
				p.file, lineOf(p.root, append(key, "forward_inbound_auth")), name))
		case s.ForwardInboundAuth:
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: mcp.servers.%s.forward_inbound_auth: MCP 2026-07-28 forbids passing a client's token on to another service; "+
				"use token_exchange (RFC 8693) to act for the caller", p.file, lineOf(p.root, append(key, "forward_inbound_auth")), name))
		}
		if te := s.TokenExchange; te != nil {
			tkey := append(append([]string{}, key...), "token_exchange")
			if u, err := url.Parse(te.TokenURL); te.TokenURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.addPath(append(tkey, "token_url"), "must be the token endpoint's http(s) URL")
			} else {
				p.checkPort(append(tkey, "token_url"), u)
			}
			if te.ClientID == "" {
				p.addPath(append(tkey, "client_id"), "is required (the gateway's own client)")
			}
			if te.Audience == "" && te.Resource == "" {
				p.addPath(tkey, "needs audience or resource naming the server")
			}
			if c.Auth.Mode != "jwt" {
				p.addPath(tkey, "needs auth.mode jwt (the caller's access token is the subject token)")
			}
			if s.Transport == "stdio" {
				p.addPath(tkey, "a stdio server takes no HTTP credentials")
			}
			if s.ForwardInboundAuth {
				p.addPath(append(key, "forward_inbound_auth"), "cannot be combined with token_exchange")
			}
			for h := range s.Headers {
				if strings.EqualFold(h, "Authorization") {
					p.addPath(append(key, "headers", h), "cannot be combined with token_exchange (a static header always wins, so the exchanged token would never be sent)")
				}
			}
		}
		p.validatePins(c, key, s)
	}
}

// validateScope checks a server's session_scope (a negative max_sessions
// is refused with the other negative numbers).
func (p *parser) validateScope(s *Server, key []string) {
	switch s.SessionScope {
	case "caller", "call", "shared":
	default:
		p.addPath(append(key, "session_scope"), fmt.Sprintf("unknown session_scope %q (want caller, call or shared)", s.SessionScope))
	}
}

// validatePins checks a server's pin_tools and tool_checks.
func (p *parser) validatePins(c *Config, key []string, s *Server) {
	switch s.PinTools {
	case "off":
	case "warn", "enforce":
		if c.Pins == "" {
			p.addPath(append(key, "pin_tools"), "pin_tools "+s.PinTools+" needs a pins file (top-level pins: PATH; create it with `pallasgw pins init`)")
		}
	default:
		p.addPath(append(key, "pin_tools"), fmt.Sprintf("unknown mode %q (want off, warn or enforce)", s.PinTools))
	}
	ck := append(append([]string{}, key...), "tool_checks")
	if m := s.ToolChecks.Mode; m != "warn" && m != "refuse" {
		p.addPath(append(ck, "mode"), fmt.Sprintf("unknown mode %q (want warn or refuse)", m))
	}
	if s.ToolChecks.MaxDescription < 0 {
		p.addPath(append(ck, "max_description"), "must not be negative")
	}
	for i, re := range s.ToolChecks.Patterns {
		if _, err := regexp.Compile(re); err != nil {
			p.addPath(append(ck, "patterns", strconv.Itoa(i)), err.Error())
		}
	}
}

// asymmetric are the JWS algorithms auth.jwt.algorithms may name: never
// none, never HMAC (a shared secret an issuer's public key could pose as).
var asymmetric = map[string]bool{"RS256": true, "RS384": true, "RS512": true, "PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true, "EdDSA": true}

func (p *parser) validateJWT(j *JWT) {
	key := []string{"auth", "jwt"}
	if j == nil {
		p.addPath(key, "mode jwt needs auth.jwt with an issuer")
		return
	}
	if u, err := url.Parse(j.Issuer); j.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		p.addPath(append(key, "issuer"), "must be the issuer's http(s) URL")
	} else {
		p.checkPort(append(key, "issuer"), u)
	}
	if j.JWKSURL != "" {
		if u, err := url.Parse(j.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.addPath(append(key, "jwks_url"), "must be an http(s) URL")
		} else {
			p.checkPort(append(key, "jwks_url"), u)
		}
	}
	for i, a := range j.Algorithms {
		if !asymmetric[a] {
			p.addPath(append(key, "algorithms", strconv.Itoa(i)), fmt.Sprintf("%q is not accepted (asymmetric algorithms only: RS*, PS*, ES*, EdDSA)", a))
		}
	}
	if j.ClockSkew < 0 || j.ClockSkew > 10*time.Minute {
		p.addPath(append(key, "clock_skew"), "must be between 0 and 10m")
	}
	for _, g := range sortedKeys(j.Scopes) {
		p.checkGlobs(append(key, "scopes"), []string{g})
		for i, sc := range j.Scopes[g] {
			if sc == "" || strings.ContainsAny(sc, " \"\\") {
				p.addPath(append(key, "scopes", g, strconv.Itoa(i)), fmt.Sprintf("invalid scope %q", sc))
			}
		}
	}
}

func (p *parser) validateQuotas(c *Config) {
	q := c.Quotas
	p.checkStore([]string{"quotas", "store"}, q.Store)
	p.checkStore([]string{"sessions", "store"}, c.Sessions.Store)
	if q.OnStoreError != "open" && q.OnStoreError != "closed" {
		p.addPath([]string{"quotas", "on_store_error"}, fmt.Sprintf("unknown value %q (want open or closed)", q.OnStoreError))
	}
}

func (p *parser) validateTracing(c *Config) {
	t := c.Tracing
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.addPath([]string{"tracing", "endpoint"}, "must be an http:// or https:// URL (OTLP/HTTP), e.g. http://127.0.0.1:4318")
		} else {
			p.checkPort([]string{"tracing", "endpoint"}, u)
		}
	}
	if t.Sampling < 0 || t.Sampling > 1 || t.Sampling != t.Sampling {
		p.addPath([]string{"tracing", "sampling"}, fmt.Sprintf("must be between 0 and 1, not %v", t.Sampling))
	}
}

func (p *parser) validatePolicy(c *Config) {
	for _, name := range sortedKeys(c.Policy.Callers) {
		p.checkRule([]string{"policy", "callers", name}, c.Policy.Callers[name])
	}
	p.checkRule([]string{"policy", "default"}, c.Policy.Default)
	for _, kl := range [][2]string{{"listing", c.Policy.Audit.Listing}, {"calls", c.Policy.Audit.Calls}} {
		key, level := kl[0], kl[1]
		switch level {
		case "debug", "info", "warn", "error":
		default:
			p.addPath([]string{"policy", "audit", key}, fmt.Sprintf("%q is not a log level (debug, info, warn, error)", level))
		}
	}
}

func (p *parser) checkRule(key []string, r *Rule) {
	if r == nil {
		return
	}
	for _, claim := range sortedKeys(r.Match) {
		switch v := r.Match[claim].(type) {
		case string, int, bool:
		case []any:
			for i, e := range v {
				switch e.(type) {
				case string, int, bool:
				default:
					p.addPath(append(key, "match", claim, strconv.Itoa(i)), "must be a string, a number or a boolean")
				}
			}
		default:
			p.addPath(append(key, "match", claim), "must be a value or a list of values")
		}
	}
	p.checkGlobs(append(key, "agents"), r.Agents)
	p.checkGlobs(append(key, "servers"), r.Servers)
	p.checkGlobs(append(key, "tools", "allow"), r.Tools.Allow)
	p.checkGlobs(append(key, "tools", "deny"), r.Tools.Deny)
}

func (p *parser) checkGlobs(key []string, globs []string) {
	for i, g := range globs {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			p.addPath(append(append([]string{}, key...), strconv.Itoa(i)), fmt.Sprintf("invalid glob %q", g))
		}
	}
}

// tokenDigest is the SHA-256 of a plain token, or the digest a "sha256:"
// token gives (as policy compares them); false for a malformed one.
func tokenDigest(v string) ([sha256.Size]byte, bool) {
	var d [sha256.Size]byte
	h, isHash := strings.CutPrefix(v, "sha256:")
	if !isHash {
		return sha256.Sum256([]byte(v)), v != ""
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return d, false
	}
	copy(d[:], b)
	return d, true
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// providerNames are the models.providers keys as an error may name them.
func providerNames(c *Config) []string {
	names := sortedKeys(c.Models.Providers)
	for i, n := range names {
		names[i] = keyPart(n)
	}
	return names
}
