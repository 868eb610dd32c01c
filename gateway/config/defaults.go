package config

import (
	"strings"
	"time"
	"unicode"
)

// Every default of the config, in one place.
const (
	DefaultVersion            = "1.0.0"
	DefaultListen             = "0.0.0.0:8200"
	DefaultShutdownTimeout    = 30 * time.Second
	DefaultMaxSessions        = 64 // per downstream server
	DefaultDrainDelay         = 5 * time.Second
	DefaultDebounce           = 100 * time.Millisecond
	DefaultPollInterval       = 30 * time.Second
	DefaultMaxBodyBytes       = 10 << 20
	DefaultMaxHistoryEntries  = 500
	DefaultMaxImageBytes      = 5 << 20
	DefaultMaxToolResultBytes = 100 << 10
	DefaultModel              = "passthrough"
	DefaultToolName           = "send_message"
	DefaultMaxIterations      = 12
	DefaultMinRating          = "GOOD"
	DefaultMaxRefinements     = 3
	DefaultAgentTimeout       = 300 * time.Second
	DefaultProviderTimeout    = 300 * time.Second
	DefaultServerTimeout      = 60 * time.Second
	DefaultMaxDescription     = 2048
	DefaultClockSkew          = 60 * time.Second
	DefaultOpenAIBaseURL      = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultServiceName        = "pallasgw"
	DefaultSlowP95            = 30 * time.Second
	DefaultLatencyWindow      = 50
	// MinLatencySamples is the fewest model calls a p95 is reported on;
	// LatencyMaxAge how old a call may be to count.
	MinLatencySamples = 5
	LatencyMaxAge     = 15 * time.Minute
)

func (p *parser) applyDefaults(c *Config) {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Version, DefaultVersion)
	def(&c.Namespace, c.Name)
	def(&c.Listen, DefaultListen)
	def(&c.Auth.Mode, "passthrough")
	def(&c.Quotas.Store, "memory")
	def(&c.Quotas.OnStoreError, "open")
	def(&c.Sessions.Store, StoreMemory)
	def(&c.Tracing.ServiceName, DefaultServiceName)
	// sampling: 0 written explicitly keeps no new trace; absent means 1.
	if lookup(p.root, []string{"tracing", "sampling"}) == nil {
		c.Tracing.Sampling = 1
	}
	def(&c.Models.Default, DefaultModel)
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	// drain_delay: 0 written explicitly means none; absent means the default.
	if lookup(p.root, []string{"drain_delay"}) == nil {
		c.DrainDelay = DefaultDrainDelay
	}
	if c.Reload.Debounce == 0 {
		c.Reload.Debounce = DefaultDebounce
	}
	// wire.fast: on unless written false.
	if lookup(p.root, []string{"wire", "fast"}) == nil {
		c.Wire.Fast = true
	}
	// console: on unless written false.
	if lookup(p.root, []string{"console"}) == nil {
		c.Console = true
	}
	// poll_interval: 0 written explicitly means off; absent means the default.
	if lookup(p.root, []string{"reload", "poll_interval"}) == nil {
		c.Reload.PollInterval = DefaultPollInterval
	}
	if c.Limits.MaxBodyBytes == 0 {
		c.Limits.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Limits.MaxHistoryEntries == 0 {
		c.Limits.MaxHistoryEntries = DefaultMaxHistoryEntries
	}
	if c.Limits.MaxImageBytes == 0 {
		c.Limits.MaxImageBytes = DefaultMaxImageBytes
	}
	if c.Limits.MaxToolResultBytes == 0 {
		c.Limits.MaxToolResultBytes = DefaultMaxToolResultBytes
	}
	for i := range c.Auth.Tokens {
		if c.Auth.Tokens[i].Agents == nil {
			c.Auth.Tokens[i].Agents = []string{"*"}
		}
	}
	if j := c.Auth.JWT; j != nil {
		if len(j.Algorithms) == 0 {
			j.Algorithms = []string{"RS256", "ES256", "EdDSA"}
		}
		if lookup(p.root, []string{"auth", "jwt", "clock_skew"}) == nil {
			j.ClockSkew = DefaultClockSkew
		}
		def(&j.IdentityClaim, "sub")
		if len(j.AuthorizationServers) == 0 && j.Issuer != "" {
			j.AuthorizationServers = []string{j.Issuer}
		}
	}
	def(&c.Policy.Audit.Listing, "debug")
	def(&c.Policy.Audit.Calls, "info")
	for name, r := range c.Policy.Callers {
		if r != nil {
			r.Line = lineOf(p.root, []string{"policy", "callers", name})
		}
	}
	for ref, caps := range c.Models.Capabilities {
		if caps.ContextWindow == 0 {
			caps.ContextWindow = DefaultContextWindow
		}
		if caps.MaxOutputTokens == 0 {
			caps.MaxOutputTokens = DefaultMaxOutputTokens
		}
		c.Models.Capabilities[ref] = caps
	}
	for name, pr := range c.Models.Providers {
		if pr == nil {
			pr = &Provider{}
			c.Models.Providers[name] = pr
		}
		providerDefaults(name, pr)
	}
	for name, s := range c.MCP.Servers {
		if s == nil {
			continue
		}
		def(&s.PinTools, "off")
		def(&s.ToolChecks.Mode, "warn")
		if lookup(p.root, []string{"mcp", "servers", name, "tool_checks", "max_description"}) == nil {
			s.ToolChecks.MaxDescription = DefaultMaxDescription
		}
		if s.Transport == "" { // inferred: a command is a stdio server, anything else http
			s.Transport = "http"
			if s.Command != "" {
				s.Transport = "stdio"
			}
		}
		if s.Timeout == 0 {
			s.Timeout = DefaultServerTimeout
		}
		if s.SessionScope == "" { // one stdio process is one session: shared unless told
			s.SessionScope = "caller"
			if s.Transport == "stdio" {
				s.SessionScope = "shared"
			}
		}
		if s.MaxSessions == 0 {
			s.MaxSessions = DefaultMaxSessions
		}
		if s.OAuth != nil && s.OAuth.ConnectWait == 0 {
			s.OAuth.ConnectWait = DefaultConnectWait
		}
	}
	for name, a := range c.Agents {
		if a == nil {
			a = &Agent{}
			c.Agents[name] = a
		}
		a.Name = name
		def(&a.Kind, KindLLM)
		def(&a.Title, TitleFromName(name))
		def(&a.ToolName, DefaultToolName)
		if a.Model == "" && (a.Kind == KindLLM || a.Kind == KindRouter || a.Kind == KindOrchestrator) {
			a.Model = c.Models.Default
		}
		if a.Kind == KindEvaluatorOptimizer {
			def(&a.MinRating, DefaultMinRating)
			if p.agentKey(name, "max_refinements") == nil {
				a.MaxRefinements = DefaultMaxRefinements
			}
		}
		if a.Kind == KindOrchestrator {
			def(&a.Plan, PlanFull)
		}
		if a.MaxIterations == 0 {
			a.MaxIterations = DefaultMaxIterations
		}
		if a.ToolSearch.MaxTools == 0 {
			a.ToolSearch.MaxTools = DefaultSearchMaxTools
		}
		if a.Timeout == 0 {
			a.Timeout = DefaultAgentTimeout
		}
		// health.slow_p95: 0 written explicitly means never; absent the default.
		if lookup(p.agentKey(name, "health"), []string{"slow_p95"}) == nil {
			a.Health.SlowP95 = DefaultSlowP95
		}
		if a.Health.Window == 0 {
			a.Health.Window = DefaultLatencyWindow
		}
		a.CodeMode.ApplyDefaults(a.Timeout)
	}
}

func providerDefaults(name string, p *Provider) {
	p.Name = name
	if p.Type == "" && (name == ProviderOpenAI || name == ProviderAnthropic) {
		p.Type = name
	}
	switch {
	case p.BaseURL != "":
	case p.Type == ProviderOpenAI:
		p.BaseURL = DefaultOpenAIBaseURL
	case p.Type == ProviderAnthropic:
		p.BaseURL = DefaultAnthropicBaseURL
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultProviderTimeout
	}
	if p.MaxRetries == nil {
		two := 2
		p.MaxRetries = &two
	}
}

// TitleFromName turns an agent key into a title: "tech_research" → "Tech Research".
func TitleFromName(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' })
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

// Slug is the registry slug of an agent: "_" turned into "-".
func Slug(name string) string { return strings.ReplaceAll(name, "_", "-") }

// SplitModel splits "provider.model" into its parts; the built-in models
// "passthrough" and "playback" have provider "builtin".
func SplitModel(ref string) (provider, model string) {
	if ref == "passthrough" || ref == "playback" {
		return "builtin", ref
	}
	provider, model, _ = strings.Cut(ref, ".")
	return provider, model
}
