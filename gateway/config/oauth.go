package config

// Per-caller upstream OAuth (mcp.servers.X.oauth) and the key its tokens
// are sealed with (credentials).

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OAuth is a server's upstream OAuth client: each caller connects its own
// account once, at the authorization server the server names, and its
// token is then what the server receives for that caller. Every field
// defaults to what discovery finds: the server's protected resource
// metadata (RFC 9728, named by its 401), then the authorization server's
// metadata (RFC 8414, else OpenID discovery).
type OAuth struct {
	ClientID     string   `yaml:"client_id"`     // default: dynamic registration (RFC 7591), kept in the session store
	ClientSecret Secret   `yaml:"client_secret"` // default none (a public client)
	Scopes       []string `yaml:"scopes"`        // default: the resource's scopes_supported
	// Audience is sent as the token request's audience, for
	// authorization servers that ignore resource (Ory Hydra). Default none.
	Audience string `yaml:"audience"`
	// Resource is the resource indicator (RFC 8707); default the server's url.
	Resource string `yaml:"resource"`
	// AuthorizationServer is the issuer's URL; default the first of the
	// resource's authorization_servers.
	AuthorizationServer string `yaml:"authorization_server"`
	// ConnectWait is how long a call waits for its caller to connect once
	// the caller accepted the URL elicitation; default 2m.
	ConnectWait time.Duration `yaml:"connect_wait"`
}

// Credentials is the key upstream tokens are sealed with (AES-256-GCM).
type Credentials struct {
	// Key is 32 bytes in base64. Required with a shared session store;
	// default with memory: random per process (the tokens live in the
	// process's memory there, and end with it either way).
	Key Secret `yaml:"key"`
	// PreviousKeys still open tokens sealed before a rotation; they are
	// sealed again with Key when next written. Default none.
	PreviousKeys []Secret `yaml:"previous_keys"`
}

// DefaultConnectWait is oauth.connect_wait's default.
const DefaultConnectWait = 2 * time.Minute

// AnyOAuth reports whether some server has oauth.
func (c *Config) AnyOAuth() bool {
	for _, s := range c.MCP.Servers {
		if s != nil && s.OAuth != nil {
			return true
		}
	}
	return false
}

// CredentialKey decodes a credentials key (checked by validation).
func CredentialKey(s Secret) []byte {
	k, err := base64.StdEncoding.DecodeString(s.Value())
	if err != nil || len(k) != 32 {
		return nil
	}
	return k
}

// validateOAuth checks the servers' oauth and the credentials key.
func (p *parser) validateOAuth(c *Config) {
	ck := []string{"credentials"}
	if c.Credentials.Key.Value() != "" && CredentialKey(c.Credentials.Key) == nil {
		p.addPath(append(ck, "key"), "must be 32 bytes in base64 (openssl rand -base64 32)")
	}
	for i, k := range c.Credentials.PreviousKeys {
		if CredentialKey(k) == nil {
			p.addPath(append(ck, "previous_keys", strconv.Itoa(i)), "must be 32 bytes in base64 (openssl rand -base64 32)")
		}
	}
	if !c.AnyOAuth() {
		return
	}
	if c.PublicURL == "" {
		p.addPath([]string{"public_url"}, "is required with mcp.servers.*.oauth (the connect and redirect URLs are built from it)")
	}
	if c.Auth.Mode != "tokens" && c.Auth.Mode != "jwt" {
		p.addPath([]string{"auth", "mode"}, "mcp.servers.*.oauth needs auth.mode tokens or jwt (a connection belongs to an authenticated caller)")
	}
	shared := c.Sessions.Store != "" && c.Sessions.Store != StoreMemory
	if shared && c.Credentials.Key.Value() == "" {
		p.addPath(append(ck, "key"), "is required with mcp.servers.*.oauth and a shared sessions.store (every replica opens the tokens)")
	}
	for _, name := range sortedKeys(c.MCP.Servers) {
		s := c.MCP.Servers[name]
		if s == nil || s.OAuth == nil {
			continue
		}
		p.validateServerOAuth(name, s)
	}
}

// validateServerOAuth checks one server's oauth against the server's
// other credentials: the caller's own token is the only one it receives.
func (p *parser) validateServerOAuth(name string, s *Server) {
	key := []string{"mcp", "servers", name}
	okey := append(append([]string{}, key...), "oauth")
	o := s.OAuth
	if s.Transport != "http" {
		p.addPath(okey, "needs transport http (Streamable HTTP)")
	}
	if s.TokenExchange != nil {
		p.addPath(append(key, "token_exchange"), "cannot be combined with oauth")
	}
	if s.ForwardInboundAuth {
		p.addPath(append(key, "forward_inbound_auth"), "cannot be combined with oauth")
	}
	if s.SessionScope == "shared" && s.Transport != "stdio" {
		p.addPath(append(key, "session_scope"), "shared cannot be combined with oauth (a downstream session belongs to one caller)")
	}
	for h := range s.Headers {
		if strings.EqualFold(h, "Authorization") {
			p.addPath(append(key, "headers", h), "cannot be combined with oauth (the caller's own token is the server's Authorization)")
		}
	}
	for in, out := range s.ForwardHeaders {
		if strings.EqualFold(out, "Authorization") {
			p.addPath(append(key, "forward_headers", in), "cannot map to Authorization with oauth (the caller's own token is the server's Authorization)")
		}
	}
	for _, f := range []struct{ k, v string }{{"authorization_server", o.AuthorizationServer}, {"resource", o.Resource}} {
		if f.v == "" {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.addPath(append(okey, f.k), "must be an absolute http(s) URL")
		}
	}
	if o.ClientSecret.Value() != "" && o.ClientID == "" {
		p.addPath(append(okey, "client_secret"), "needs client_id")
	}
	if o.ConnectWait < 0 {
		p.addPath(append(okey, "connect_wait"), "must not be negative")
	}
}
