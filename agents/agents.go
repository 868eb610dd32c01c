// Package agents owns the agents of one snapshot: each agent's MCP server
// (get_health, and send_message or its tool_name with the {agent}_history
// prompt for the kinds that answer it), progress reporting and health. A
// kind is a plug-in (kind.go): its package registers a Factory, which is
// handed the agent's Host (host.go) and returns what the agent offers; the
// kinds are agents/kinds/toolloop (llm), workflow, proxy and toolbox,
// which it never names. It keeps what every kind shares: model selection
// (model.go) and a call's overrides and arguments (overrides.go, turn.go)
// for the kinds with send_message. Each agent's HTTP endpoint is
// agents/endpoint, which it constructs with the agent's MCP server and
// the kind's fast-path target. It consults policy for outbound headers and
// tool rules and uses mcpclient for downstream servers and llm for models.
// It does not route HTTP, watch files or swap snapshots: the gateway builds
// a Set per config and serves its handlers.
package agents

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
)

// ProviderState is what the gateway knows of an LLM provider.
type ProviderState struct {
	// Check is the last preflight's error (nil: ok or not run).
	Check error
	// Answered: a real call to the provider answered after its check
	// began failing, and recently: the check, not the provider, is wrong.
	Answered bool
}

// Deps are the shared parts an agent Set is built with.
type Deps struct {
	Config     *config.Config
	Logger     *zap.Logger
	Metrics    *metrics.Metrics
	Downstream mcpclient.Downstream // the one downstream (a snapshot's *mcpclient.Downstreams)
	// Providers by provider name (the keys of models.providers); built-ins
	// are made per agent by the Set.
	Providers map[string]llm.Provider
	// SearchVectors keeps tool search's embeddings (tool_search.embeddings)
	// by provider endpoint and model, across reloads (nil: each agent's
	// index keeps its own).
	SearchVectors *toolsearch.VectorSpaces
	// Preflight reports what is known of a provider key: its last
	// preflight result and whether real calls answered since its check
	// began failing (zero: ok or unknown).
	Preflight func(provider string) ProviderState
	// ProviderSeen is told what each real call to a provider saw (err nil:
	// it answered), so a provider is checked again when calls disagree
	// with its last check (nil: not told).
	ProviderSeen func(provider string, err error)
	Composer     *policy.Composer
	Auditor      *policy.Auditor
	Callers      *policy.CallerPolicy
	// AllowAgent applies the caller's credential (a token's agents, a
	// JWT's scopes) to an agent run on its behalf by another agent (nil:
	// only Callers is applied).
	AllowAgent func(ctx context.Context, agent string) policy.Decision
	// InboundAuthMayTravel is false in auth mode tokens: the gateway's own
	// token never goes downstream.
	InboundAuthMayTravel bool
	// Exchanger trades JWT callers' tokens for servers with
	// token_exchange (nil: one per Set).
	Exchanger *policy.Exchanger
	// Upstream gives servers with oauth each caller's own token (nil:
	// such servers are refused).
	Upstream UpstreamCredentials
	// Quotas bound callers' LLM tokens (nil: no limits).
	Quotas *quota.Guard
	// CallerRequests holds the sampling and roots requests waiting for
	// callers' answers; shared by every snapshot (nil: one per Set).
	CallerRequests *endpoint.CallerRequests
	// TaskIndex records proxies' tasks for every replica (the shared
	// session store; nil: each replica its own).
	TaskIndex TaskIndex
	// Status is the gateway's status document (what GET /-/status
	// answers), for toolboxes with gateway_status (nil: none).
	Status func() any
}

// Set is the agents of one snapshot, by name.
type Set struct {
	deps   Deps
	agents map[string]*Agent
	rules  map[string]policy.HeaderRules // per server
}

// Build constructs every agent of the config. It starts nothing that
// outlives Close.
func Build(d Deps) (*Set, error) {
	if d.Exchanger == nil {
		d.Exchanger = &policy.Exchanger{}
	}
	if d.CallerRequests == nil {
		d.CallerRequests = endpoint.NewCallerRequests()
	}
	s := &Set{deps: d, agents: map[string]*Agent{}, rules: map[string]policy.HeaderRules{}}
	for name, srv := range d.Config.MCP.Servers {
		s.rules[name] = HeaderRules(name, srv)
	}
	for name, ac := range d.Config.Agents {
		a, err := newAgent(s, ac)
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", name, err)
		}
		s.agents[name] = a
	}
	return s, nil
}

// HeaderRules maps a server's config onto the policy's header rules.
func HeaderRules(name string, s *config.Server) policy.HeaderRules {
	static := make(map[string]string, len(s.Headers))
	for k, v := range s.Headers {
		static[k] = credential(k, v.Value())
	}
	return policy.HeaderRules{Server: name, Static: static, Forward: s.ForwardHeaders, ForwardInboundAuth: s.ForwardInboundAuth,
		Blocked: policy.ExtraBlocklist(s.ExtraBlockedHeaders)}
}

// ProviderHeaderRules maps an LLM provider's config onto the policy's
// header rules: its static headers, forward_headers and
// forward_inbound_auth, composed per model call like a server's.
func ProviderHeaderRules(name string, p *config.Provider) policy.HeaderRules {
	static := make(map[string]string, len(p.Headers))
	for k, v := range p.Headers {
		static[k] = credential(k, v.Value())
	}
	return policy.HeaderRules{Server: "provider:" + name, Static: static, Forward: p.ForwardHeaders, ForwardInboundAuth: p.ForwardInboundAuth,
		Blocked: policy.ExtraBlocklist(p.ExtraBlockedHeaders)}
}

// credential is a static header's value, or "" when it carries no
// credential ("Bearer" from "Bearer ${TOKEN:-}" with TOKEN unset): an
// empty static value sends no header, rather than a bare scheme, and still
// keeps a forwarded value out.
func credential(name, v string) string {
	if config.EmptyCredential(name, v) {
		return ""
	}
	return v
}

// Get returns the named agent or nil.
func (s *Set) Get(name string) *Agent { return s.agents[name] }

// Names lists the agents in order.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.agents))
	for n := range s.agents {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// outbound composes the headers a downstream server receives for a call
// that arrived with inbound headers, for a server with token_exchange the
// token exchanged for the caller's, and for a server with oauth the
// caller's own token (upstream.go). Only a failed exchange or a missing
// connection is an error. relay is the call's (nil: none): a server with
// oauth may ask the caller to connect through it (upstream.go).
func (s *Set) outbound(ctx context.Context, server string, inbound http.Header, relay *mcpclient.Relay) (http.Header, error) {
	srv := s.deps.Config.MCP.Servers[server]
	if srv != nil && srv.Transport == "stdio" {
		return nil, nil
	}
	hdr := s.deps.Composer.Compose(s.rules[server], inbound, s.deps.InboundAuthMayTravel)
	if srv != nil && srv.OAuth != nil {
		// The caller's own token, and nothing else, is the server's
		// Authorization (validation keeps every other source out).
		auth, err := s.upstreamAuthorization(ctx, server, inbound, relay)
		if err != nil {
			return nil, err
		}
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Authorization", auth)
		return hdr, nil
	}
	if srv == nil || srv.TokenExchange == nil {
		return hdr, nil
	}
	for name := range srv.Headers {
		if strings.EqualFold(name, "Authorization") {
			return hdr, nil // a static header always wins
		}
	}
	subject, ok := bearerOf(inbound)
	if !ok || policy.IdentityFrom(ctx).Claims == nil {
		return nil, fmt.Errorf("server %s takes a token exchanged for the caller's, and this caller has no identity provider token", server)
	}
	te := srv.TokenExchange
	tok, err := s.deps.Exchanger.Token(ctx, policy.ExchangeSpec{Server: server, TokenURL: te.TokenURL, ClientID: te.ClientID,
		ClientSecret: te.ClientSecret.Value(), Audience: te.Audience, Resource: te.Resource, Scopes: te.Scopes}, subject)
	if err != nil {
		return nil, err
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Authorization", "Bearer "+tok)
	return hdr, nil
}

// bearerOf is the token of the caller's "Authorization: Bearer" header.
func bearerOf(h http.Header) (string, bool) {
	scheme, token, ok := strings.Cut(h.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}
