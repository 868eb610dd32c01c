package agents

// The Host: what an agent kind needs of the gateway, as methods of one
// interface it is handed (kind.go's Factory). A kind never reaches the
// agent set, the endpoint or the gateway any other way.

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/relay"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

// Base is what most kinds keep of their agent: its Host, and its name,
// config and logger read once (NewBase).
type Base struct {
	Host
	Name   string
	Config *config.Agent
	Log    *zap.Logger
}

// NewBase reads h's name, config and logger once.
func NewBase(h Host) *Base {
	return &Base{Host: h, Name: h.Name(), Config: h.Config(), Log: h.Logger()}
}

// Host is what a kind is handed of the gateway for one agent: its config
// and identity, the other agents, the downstream, the policy's parts, the
// metrics, and the calls back a kind makes (outbound headers, the caller's
// requests, panic recovery). Every method is safe for concurrent use.
type Host interface {
	// Name is the agent's name.
	Name() string
	// Config is the agent's config; Gateway the whole config it is part
	// of (servers, auth, limits). Neither may be written.
	Config() *config.Agent
	Gateway() *config.Config
	// Self is the agent's identity as its MCP server gives it.
	Self() mcp.Implementation
	// Logger is the agent's logger.
	Logger() *zap.Logger
	Metrics() *metrics.Metrics
	// Downstream is the one downstream the kinds call (mcpclient).
	Downstream() mcpclient.Downstream
	Callers() *policy.CallerPolicy
	Auditor() *policy.Auditor
	// TaskIndex records the tasks callers create for every replica (nil:
	// each replica its own).
	TaskIndex() TaskIndex
	// Agent is another agent of the same set, for delegation (nil: none
	// of that name).
	Agent(name string) *Agent

	// Outbound composes the headers server receives for a call that
	// arrived with inbound headers; relay (nil: none) is the call's, by
	// which a server with oauth may ask the caller to connect.
	Outbound(ctx context.Context, server string, inbound http.Header, relay *mcpclient.Relay) (http.Header, error)
	// Rejected is told of a call server refused for its credentials (401),
	// so that a caller's own token is renewed before the next.
	Rejected(ctx context.Context, server string, err error)
	// Observe records one call's outcome in the tool metrics; caller is
	// the caller's policy key (the metric keeps only names the config
	// knows). Outcome names the outcome of a call that ended with err.
	Observe(caller, tool, outcome string, start time.Time)
	Outcome(ctx context.Context, err error) string
	// RequestID is the request id of ctx.
	RequestID(ctx context.Context) string
	// TaskTag is a MAC of parts under a key the replicas share
	// (endpoint.CallerRequests.Tag): it binds task ids to their creator.
	TaskTag(parts ...string) string
	// Health answers the agent's own get_health.
	Health(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error)
	// Request sends a downstream's server-to-client request to the caller
	// of wc, on its tracked response (wc.Sink), between the notifications
	// of relay (the endpoint's; nil: none); for a call the input-required
	// bridge runs, to its round-trip state (wc.Rounds; nil: not bridged).
	Request(ctx context.Context, relay *relay.Relay, wc *wire.Call, method string, params json.RawMessage) (json.RawMessage, error)
	// Relay prepares one downstream call for the caller of wc, the fast
	// path's call (nil: mcp-go's handler's): the returned Relay takes the
	// downstream's server-to-client requests (elicitation, sampling,
	// roots) to the caller (mcpclient.CallOptions; to wc.Rounds, the call's
	// round-trip state, when the input-required bridge runs it) and sends
	// the gateway's own notifications to it (wc.Notifier), onProgress
	// relays its progress under token (nil: none asked), and done waits
	// until what was relayed is written and ends the relay (nothing is
	// written to the caller after it).
	Relay(ctx context.Context, wc *wire.Call, token mcp.ProgressToken) (requests *mcpclient.Relay, onProgress mcpclient.ProgressFunc, done func())
	// Quota takes one request from the caller's requests_per_minute.
	Quota(ctx context.Context) error
	// Recover, deferred on a goroutine that a call starts, turns a panic
	// there into an error for the call (fail), logged with its stack.
	Recover(rid, what string, fail func(error))
	// HasStatus reports whether the gateway has a status document, and
	// Status is that document (what GET /-/status answers).
	HasStatus() bool
	Status() any
	// SearchEmbeddings are the embedder and the vector space of the
	// agent's tool_search.embeddings (nil, nil: lexical ranking only).
	SearchEmbeddings() (toolsearch.Embedder, *toolsearch.Vectors)
	// Script is the runner of the agent's run_script (nil: not offered).
	Script() *codemode.Runner
	// Requests is the Relay of a downstream call of c that takes the
	// downstream's elicitation, sampling and roots requests to the agent's
	// caller, ordered after what c.Progress has sent, or to c.Rounds, the
	// call's round-trip state (Host.Request), and sends the gateway's own
	// notifications to the caller of c (nil: none).
	Requests(c *Call) *mcpclient.Relay
	// Model is the agent's model (its config's model), as the core's
	// model selection makes it; an error when it cannot be used.
	Model() (Model, error)
	// SendMessage is the Kind of an agent whose one tool is send_message
	// (or its tool_name), answered by r: the llm kind and the workflows.
	SendMessage(r Runner) Kind
}

// TaskIndex records who created which task where every replica reads it
// (sessions.Store implements it). Without one, tasks/list shows the tasks
// created through this replica.
type TaskIndex interface {
	IndexAdd(ctx context.Context, key, member string, max int, ttl time.Duration) error
	IndexHas(ctx context.Context, key string, members []string) ([]bool, error)
}

// host is an agent's Host.
type host struct{ a *Agent }

var _ Host = host{}

func (h host) Name() string                     { return h.a.Name }
func (h host) Config() *config.Agent            { return h.a.Config }
func (h host) Gateway() *config.Config          { return h.a.set.deps.Config }
func (h host) Self() mcp.Implementation         { return h.a.self() }
func (h host) Logger() *zap.Logger              { return h.a.log }
func (h host) Metrics() *metrics.Metrics        { return h.a.set.deps.Metrics }
func (h host) Downstream() mcpclient.Downstream { return h.a.set.deps.Downstream }
func (h host) Callers() *policy.CallerPolicy    { return h.a.set.deps.Callers }
func (h host) Auditor() *policy.Auditor         { return h.a.set.deps.Auditor }
func (h host) TaskIndex() TaskIndex             { return h.a.set.deps.TaskIndex }
func (h host) Agent(name string) *Agent         { return h.a.set.Get(name) }

func (h host) Outbound(ctx context.Context, server string, inbound http.Header, relay *mcpclient.Relay) (http.Header, error) {
	return h.a.set.outbound(ctx, server, inbound, relay)
}

func (h host) Rejected(ctx context.Context, server string, err error) {
	h.a.set.upstreamRejected(ctx, server, err)
}

func (h host) Observe(caller, tool, outcome string, start time.Time) {
	h.a.observe(caller, tool, outcome, start)
}

func (h host) Outcome(ctx context.Context, err error) string { return outcomeOf(ctx, err) }
func (h host) RequestID(ctx context.Context) string          { return RequestID(ctx) }

func (h host) TaskTag(parts ...string) string {
	return h.a.set.deps.CallerRequests.Tag(parts...)
}

func (h host) Health(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return h.a.handleHealth(ctx, req)
}

func (h host) Request(ctx context.Context, relay *relay.Relay, wc *wire.Call, method string, params json.RawMessage) (json.RawMessage, error) {
	var rounds wire.Rounds // the bridge's, or none
	if wc != nil {
		rounds = wc.Rounds
	}
	return h.a.handler.Request(ctx, wc.Stream(), rounds, sequencer(relay), method, params) // the endpoint is built after the kind
}

func (h host) Relay(ctx context.Context, wc *wire.Call, token mcp.ProgressToken) (*mcpclient.Relay, mcpclient.ProgressFunc, func()) {
	var rounds wire.Rounds // the bridge's, or none
	if wc != nil {
		rounds = wc.Rounds
	}
	relay := relay.NewCallRelay(ctx, wc, wc.Stream(), token, h.a.set.deps.Metrics)
	notify, _ := wc.Notifier(ctx, true)
	requests := &mcpclient.Relay{Notify: notify, Request: func(dctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return h.a.handler.Request(dctx, wc.Stream(), rounds, sequencer(relay), method, params)
	}}
	return requests, relay.ProgressFunc(), func() {
		relay.Flush(2 * time.Second)
		relay.End()
	}
}

func (h host) Quota(ctx context.Context) error { return h.a.scriptRequest(ctx) }

func (h host) Recover(rid, what string, fail func(error)) {
	// recoverCall's recover must run in the deferred function itself.
	if p := recover(); p != nil {
		h.a.recovered(rid, what, p, fail)
	}
}

func (h host) HasStatus() bool { return h.a.set.deps.Status != nil }
func (h host) Status() any     { return h.a.set.deps.Status() }

func (h host) SearchEmbeddings() (toolsearch.Embedder, *toolsearch.Vectors) {
	return h.a.searchEmbeddings()
}

func (h host) Script() *codemode.Runner { return h.a.toolboxScript() }

func (h host) Requests(c *Call) *mcpclient.Relay {
	return h.a.relayRequests(c.Progress, c.Rounds, c.notify, c.sink)
}

func (h host) Model() (Model, error) {
	m, err := newModelRef(h.a, h.a.Config.Model)
	if err != nil {
		return nil, err
	}
	return agentModel{m: m, a: h.a}, nil
}

// sequencer is relay as the endpoint takes it: nil stays nil.
func sequencer(relay *relay.Relay) endpoint.Sequencer {
	if relay == nil {
		return nil
	}
	return relay
}

// scriptRequest takes one request from the caller's requests_per_minute
// for a script's tool call, so that a script calls no more than its caller
// could one call at a time.
func (a *Agent) scriptRequest(ctx context.Context) error {
	id := policy.IdentityFrom(ctx)
	key, label := id.QuotaKey()
	return a.set.deps.Quotas.Request(ctx, key, label, a.set.deps.Callers.Limits(id.PolicyKey()))
}

// toolboxScript is a toolbox's run_script runner; nil, with a warning, when
// two of its servers (or one and a builtin) take one name in a script: a
// toolbox offers run_script without being asked to, so such a config still
// serves the other tools.
func (a *Agent) toolboxScript() *codemode.Runner {
	if err := codemode.CheckServers(a.Config.Servers); err != nil {
		a.log.Warn("run_script not offered", zap.Error(err))
		return nil
	}
	return codemode.NewRunner(a.Config.CodeMode)
}

// relayRequests is the Relay of a downstream call that takes the
// downstream's elicitation, sampling and roots requests to the agent's caller
// (endpoint.Request): relayed on the response stream of a session-based
// caller that declared the capability, an input-required round of rounds
// (the call's round-trip state) for a 2026-07-28 caller that declared it,
// -32021 for one that did not, and an error for the downstream otherwise
// (never a wait). notify sends the gateway's own notifications to the
// caller (nil: none); sink is the caller's tracked response
// (wire.Call.Sink), where the requests are written (nil: none).
func (a *Agent) relayRequests(progress *Reporter, rounds wire.Rounds, notify func(string, map[string]any) error, sink wire.Sink) *mcpclient.Relay {
	return &mcpclient.Relay{Notify: notify, Request: func(dctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		// The call's progress reporter orders the request after the
		// progress sent so far.
		return a.handler.Request(dctx, sink, rounds, progress, method, params)
	}}
}
