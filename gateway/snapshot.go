package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
	"github.com/pallasgw/pallasgw/registry"
)

// Snapshot is everything built from one config. It is immutable: handlers
// load it once per request and never write to it. Its resources are
// released after the last request that acquired it, once it is retired.
type Snapshot struct {
	cfg        *config.Config
	loadedAt   time.Time
	agents     *agents.Set
	registry   *registry.Registry
	downstream *mcpclient.Downstreams
	auth       *policy.Authenticator
	callers    *policy.CallerPolicy
	auditor    *policy.Auditor
	quotas     *quota.Guard // nil: no caller has limits
	origins    map[string]bool
	forwarded  map[string]bool // lower-cased inbound names of every forward_headers (CORS)
	trusted    *trustedProxies
	ports      map[int]portRole // legacy ports → what they serve
	preflight  *preflight
	tracer     *tracing.Provider // nil: tracing off
	tracesOnce sync.Once
	directory  *agents.Directory // POST /mcp; nil unless agents_endpoint
	pins       *pins.Policy      // put in force by apply

	stop      context.CancelFunc // ends what runs for the snapshot (the JWT key source)
	forget    func()             // deletes the series of what the next snapshot dropped
	done      chan struct{}      // closed when retired: stops the health loop
	active    atomic.Int64
	retired   atomic.Bool
	closeOnce sync.Once
	log       *zap.Logger
}

// portRole is what a legacy port serves: an agent, or the registry.
type portRole struct {
	agent    string // "" for the registry port
	registry bool
}

// key is the config key that asks for the port.
func (r portRole) key() []string {
	if r.registry {
		return []string{"registry_port"}
	}
	return []string{"agents", r.agent, "port"}
}

// buildSnapshot constructs a complete snapshot without touching the serving
// one. Nothing it starts runs until used; Close releases it.
func (g *Gateway) buildSnapshot(cfg *config.Config) (_ *Snapshot, err error) {
	ctx, stop := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			stop()
		}
	}()
	s := &Snapshot{cfg: cfg, loadedAt: time.Now(), log: g.log, ports: map[int]portRole{}, origins: map[string]bool{}, done: make(chan struct{}), stop: stop}
	if s.trusted, err = newTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, cfg.ErrorAt([]string{"trusted_proxies"}, err.Error())
	}
	for _, o := range cfg.AllowedOrigins {
		s.origins[o] = true
	}
	s.forwarded = forwardedHeaders(cfg)
	if s.auth, err = g.buildAuth(ctx, cfg); err != nil {
		return nil, cfg.ErrorAt([]string{"auth"}, err.Error())
	}
	if s.callers, err = policy.NewCallerPolicy(callerRules(cfg), ruleOf(cfg.Policy.Default), cfg.Policy.DenyOnMissingIdentity); err != nil {
		return nil, cfg.ErrorAt([]string{"policy"}, err.Error())
	}
	// One audit line per call, always from the same line of code: without
	// the caller, which zap finds by walking the stack.
	for _, t := range cfg.Auth.Tokens {
		s.callers.NameCallers(t.Name) // the metrics' caller label keeps these and the policy.callers names
	}
	s.auditor = &policy.Auditor{Logger: g.log.Named("audit").WithOptions(zap.WithCaller(false)), Metrics: g.metrics, Callers: s.callers,
		ListingLevel: logLevel(cfg.Policy.Audit.Listing), CallLevel: logLevel(cfg.Policy.Audit.Calls)}
	if s.quotas, err = g.buildQuotas(cfg); err != nil {
		return nil, cfg.ErrorAt([]string{"quotas", "store"}, err.Error())
	}
	if s.tracer, err = g.buildTracer(cfg); err != nil {
		return nil, cfg.ErrorAt([]string{"tracing"}, err.Error())
	}
	defer func() {
		if err != nil {
			s.shutdownTraces()
		}
	}()
	providers, err := buildProviders(cfg)
	if err != nil {
		return nil, err
	}
	s.preflight = newPreflight(providers, cfg, g.metrics, g.log)
	if s.pins, err = pinPolicy(cfg); err != nil {
		return nil, err
	}
	upstream, err := g.upstreamFor(cfg, s.auth)
	if err != nil {
		return nil, cfg.ErrorAt([]string{"credentials"}, err.Error())
	}
	s.downstream = g.downstreams.Acquire(serverSpecs(cfg))
	s.agents, err = agents.Build(agents.Deps{
		Config: cfg, Logger: g.log.Named("agent"), Metrics: g.metrics, Downstream: s.downstream,
		Providers: providers, Preflight: s.preflight.state, ProviderSeen: s.preflight.observed,
		Composer:             &policy.Composer{Blocklist: policy.NewBlocklist(cfg.Policy.ExtraBlockedHeaders), Metrics: g.metrics, Logger: g.log.Named("policy")},
		Auditor:              s.auditor,
		Callers:              s.callers,
		AllowAgent:           s.allowAgent,
		InboundAuthMayTravel: cfg.Auth.Mode != "tokens",
		CallerRequests:       g.callerReqs,
		TaskIndex:            g.taskIndex(),
		Exchanger:            g.exchanger,
		Upstream:             upstream,
		SearchVectors:        &g.vectors,
		Quotas:               s.quotas,
		Status:               g.status,
	})
	if err != nil {
		s.downstream.Close()
		return nil, cfg.ErrorAt([]string{"agents"}, err.Error())
	}
	if cfg.AgentsEndpoint {
		s.directory = s.agents.NewDirectory()
	}
	s.forget = func() { g.forgetRemoved(s) }
	s.registry = registry.New(cfg, s.loadedAt)
	for name, a := range cfg.Agents {
		if a.Port != 0 {
			s.ports[a.Port] = portRole{agent: name}
		}
	}
	if cfg.RegistryPort != 0 {
		s.ports[cfg.RegistryPort] = portRole{registry: true}
	}
	return s, nil
}

func buildProviders(cfg *config.Config) (map[string]llm.Provider, error) {
	out := map[string]llm.Provider{}
	for name, p := range cfg.Models.Providers {
		retries := *p.MaxRetries
		if retries == 0 {
			retries = -1 // llm: 0 means its default, negative means none
		}
		static := make(map[string]string, len(p.Headers))
		for k, v := range p.Headers {
			if !config.EmptyCredential(k, v.Value()) { // "Bearer ${KEY:-}" with KEY unset: no header
				static[k] = v.Value()
			}
		}
		prov, err := llm.New(llm.ProviderConfig{Kind: p.Type, BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Headers: static,
			Timeout: p.Timeout, MaxRetries: retries, SDKBody: p.SDKBody})
		if err != nil {
			return nil, cfg.ErrorAt([]string{"models", "providers", name}, err.Error())
		}
		out[name] = prov
	}
	return out, nil
}

func serverSpecs(cfg *config.Config) []mcpclient.ServerSpec {
	var out []mcpclient.ServerSpec
	for name, s := range cfg.MCP.Servers {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			env[k] = v.Value()
		}
		out = append(out, mcpclient.ServerSpec{Name: name, Transport: s.Transport, URL: s.URL, Command: s.Command,
			Args: s.Args, Env: env, Dir: s.Dir, Timeout: s.Timeout, Redact: s.Expanded(),
			Scope: s.SessionScope, MaxSessions: s.MaxSessions, CallerAuth: s.OAuth != nil})
	}
	return out
}

// buildAuth makes the snapshot's Authenticator; in mode jwt its key source
// runs until ctx ends (the snapshot closes).
func (g *Gateway) buildAuth(ctx context.Context, cfg *config.Config) (*policy.Authenticator, error) {
	j := cfg.Auth.JWT
	if cfg.Auth.Mode != policy.ModeJWT || j == nil {
		return policy.NewAuthenticator(cfg.Auth.Mode, tokenSpecs(cfg))
	}
	log := g.log.Named("auth")
	v, err := policy.NewJWTVerifier(ctx, policy.JWTOptions{Issuer: j.Issuer, JWKSURL: j.JWKSURL, Audiences: j.Audiences,
		Algorithms: j.Algorithms, ClockSkew: j.ClockSkew, IdentityClaim: j.IdentityClaim, Scopes: j.Scopes,
		OnKeyError: func(err error) {
			if errors.Is(err, policy.ErrNoKeys) {
				log.Warn("identity provider keys unavailable; JWT callers are refused until the keys are found (retrying)", zap.Error(err))
				return
			}
			log.Warn("identity provider keys unavailable; the last good keys stay in use", zap.Error(err))
		}})
	if err != nil {
		return nil, err
	}
	return policy.NewJWTAuthenticator(v, tokenSpecs(cfg))
}

func tokenSpecs(cfg *config.Config) []policy.TokenSpec {
	out := make([]policy.TokenSpec, len(cfg.Auth.Tokens))
	for i, t := range cfg.Auth.Tokens {
		out[i] = policy.TokenSpec{Name: t.Name, Token: t.Token.Value(), Agents: t.Agents}
	}
	return out
}

func ruleOf(r *config.Rule) *policy.Rule {
	if r == nil {
		return nil
	}
	return &policy.Rule{Agents: r.Agents, Servers: r.Servers, ToolsAllow: r.Tools.Allow, ToolsDeny: r.Tools.Deny, Match: r.Match, Order: r.Line,
		Limits: quota.Limits{RequestsPerMinute: r.Limits.RequestsPerMinute, TokensPerDay: r.Limits.TokensPerDay}}
}

func callerRules(cfg *config.Config) map[string]policy.Rule {
	out := map[string]policy.Rule{}
	for name, r := range cfg.Policy.Callers {
		if r != nil {
			out[name] = *ruleOf(r)
		}
	}
	return out
}

// policyChecks adds the policy rules to config validation: forward_headers
// targets and static headers must not be blocked names.
func policyChecks(c *config.Config, report func(path []string, msg string)) {
	bl := policy.NewBlocklist(c.Policy.ExtraBlockedHeaders)
	for name, s := range c.MCP.Servers {
		for _, err := range bl.Validate(agents.HeaderRules(name, s)) {
			report(ruleErrorPath([]string{"mcp", "servers", name}, err), ruleErrorMsg(err))
		}
	}
	for name, p := range c.Models.Providers {
		for _, err := range bl.Validate(agents.ProviderHeaderRules(name, p)) {
			report(ruleErrorPath([]string{"models", "providers", name}, err), ruleErrorMsg(err))
		}
	}
}

// allowAgent applies the credential of ctx's caller to an agent run on its
// behalf by another agent (agents.Deps.AllowAgent).
func (s *Snapshot) allowAgent(ctx context.Context, agent string) policy.Decision {
	return s.auth.AllowAgent(policy.IdentityFrom(ctx), agent)
}

// acquire pins the current snapshot for one request; release unpins it.
func (g *Gateway) acquire() *Snapshot {
	for {
		s := g.current.Load()
		s.active.Add(1)
		if !s.retired.Load() || g.current.Load() == s {
			return s // (a retired current snapshot only happens while stopping)
		}
		s.release() // swapped out under us: use the new one
	}
}

func (s *Snapshot) release() {
	if s.active.Add(-1) == 0 && s.retired.Load() {
		s.close()
	}
}

// retire marks the snapshot replaced; it closes after its last request.
func (s *Snapshot) retire() {
	if !s.retired.Swap(true) {
		close(s.done)
	}
	if s.active.Load() == 0 {
		s.close()
	}
}

func (s *Snapshot) close() {
	s.closeOnce.Do(func() {
		s.stop()
		s.downstream.Close()
		go s.shutdownTraces() // the provider's last spans, exported in the background
		if s.forget != nil {
			s.forget()
		}
	})
}

// forgetRemoved deletes the metric series of old's agents and providers
// that the serving snapshot no longer has (once old's last request is
// done, so nothing of old records into them again).
func (g *Gateway) forgetRemoved(old *Snapshot) {
	cur := g.current.Load()
	if cur == nil || cur == old {
		return
	}
	for name := range old.cfg.Agents {
		if _, ok := cur.cfg.Agents[name]; !ok {
			g.metrics.ForgetAgent(name)
		}
	}
	for name := range old.preflight.providers {
		if _, ok := cur.preflight.providers[name]; !ok {
			g.metrics.ForgetProvider(name)
		}
	}
}

// ruleErrorPath is the config key of a header rule problem under base (a
// server's or a provider's key).
func ruleErrorPath(base []string, err error) []string {
	var re *policy.RuleError
	if errors.As(err, &re) {
		return append(base, re.Field, re.Key)
	}
	return base
}

func ruleErrorMsg(err error) string {
	var re *policy.RuleError
	if errors.As(err, &re) {
		return re.Msg
	}
	return err.Error()
}

// logLevel is a validated level name (debug, info, warn, error) as zap's.
func logLevel(name string) zapcore.Level {
	l, err := zapcore.ParseLevel(name)
	if err != nil {
		return zapcore.InfoLevel
	}
	return l
}
