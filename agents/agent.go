package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
)

// Agent is one served agent: its config, its MCP server and HTTP handler,
// and its kind (kind.go).
type Agent struct {
	Name    string
	Config  *config.Agent
	set     *Set
	mcp     *server.MCPServer
	handler *endpoint.Endpoint
	run     Runner // send_message (nil: the kind has none)
	router  Router // the kind's, when it routes tools/calls itself (nil: by name)
	log     *zap.Logger
	health  healthCache
	latency *latencyWindow // durations of the agent's recent model calls (get_health)
}

// Call is one send_message invocation, possibly nested (a sub-agent call).
type Call struct {
	Turn
	Inbound   http.Header // headers of the caller's HTTP request
	Progress  *Reporter
	RequestID string
	Caller    string
	Depth     int
	overrides *callOverrides // this call's own; sub-calls have none
	// schema asks an llm agent's model for its answer as JSON of this
	// schema (an evaluator's rating); this call's own, like overrides.
	schema *llm.OutputSchema
	// asWorkflow: an agent above runs with run_as: workflow, so the
	// caller's agent rules are not applied to this one's (admit).
	asWorkflow bool
	// extras are the members the downstream tools/calls of the tool loop
	// add (mcpclient.CallOptions.Extras), the caller's call's; sub-calls
	// keep them. nil: none.
	extras mcpclient.CallExtras
	// Rounds is the caller's call's round-trip state when the
	// input-required bridge runs it (wire.Call.Rounds), its asks keyed
	// under the tool call or step that runs (resume.go); sub-calls keep it.
	// nil: not bridged.
	Rounds wire.Rounds
	// notify sends a notification to the caller (wire.Call.Notifier, "_meta"
	// kept), the caller's call's; sub-calls keep it. nil: none.
	notify func(method string, params map[string]any) error
	// sink is the caller's tracked response (wire.Call.Sink), where the
	// downstream's requests to the caller go; sub-calls keep it. nil: none.
	sink wire.Sink
}

// Sub derives the call a sub-agent runs: a fresh turn, same caller.
func (c *Call) Sub(message string, progress *Reporter) *Call {
	return &Call{Turn: Turn{Message: message, ConversationID: c.ConversationID}, Inbound: c.Inbound,
		Progress: progress, RequestID: c.RequestID, Caller: c.Caller, Depth: c.Depth + 1, asWorkflow: c.asWorkflow, extras: c.extras, Rounds: c.Rounds,
		notify: c.notify, sink: c.sink}
}

const sendMessageSchema = `{
  "type": "object",
  "properties": {
    "message": {"type": "string", "description": "The new user turn."},
    "images": {"type": "array", "description": "Images attached to this turn.",
      "items": {"type": "object", "properties": {"data": {"type": "string", "description": "base64"}, "mime_type": {"type": "string"}}, "required": ["data", "mime_type"]}},
    "history": {"type": "array", "description": "Prior conversation, chronological.",
      "items": {"type": "object", "properties": {"role": {"type": "string", "enum": ["user", "assistant"]}, "content": {"type": "string"},
        "images": {"type": "array", "items": {"type": "object"}}}, "required": ["role", "content"]}},
    "conversation_id": {"type": "string", "description": "Opaque id, logged only."}
  },
  "required": ["message"]
}`

// listCacheTTL (ms) is how long a 2026-07-28 caller may reuse an agent's
// list results: they change only with a reload. Private: an agent is
// reached with each caller's own credentials, so a shared cache must not
// serve one caller's answer to another.
const listCacheTTL = 60_000

const healthSchema = `{"type": "object", "properties": {}, "additionalProperties": false}`

func newAgent(s *Set, c *config.Agent) (*Agent, error) {
	a := &Agent{Name: c.Name, Config: c, set: s, log: s.deps.Logger.With(zap.String("agent", c.Name)),
		latency: newLatencyWindow(c.Health.Window)}
	factory := factoryOf(c.Kind)
	if factory == nil {
		return nil, fmt.Errorf("kind %q has no registered factory (its package is not imported)", c.Kind)
	}
	k, err := factory(host{a})
	if err != nil {
		return nil, err
	}
	a.router, _ = k.(Router)
	hooks := &server.Hooks{}
	endpoint.AwaitListenAck(hooks)
	opts := []server.ServerOption{
		server.WithHooks(hooks),
		server.WithToolCapabilities(false),
		server.WithPromptCapabilities(false),
		// Every kind declares resources: the kinds but proxy serve none and
		// answer resources/list and resources/templates/list with empty
		// lists (with the caching hints below), not -32601, as the
		// conformance suite's caching scenario asks of every server.
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithTitle(c.Title),
		server.WithDescription(c.Description),
		// Caching hints of list results for 2026-07-28 callers (a proxy
		// sets its own: its lists are built per caller).
		server.WithCacheHints(listCacheTTL, mcp.CacheScopePrivate),
	}
	opts = append(opts, k.ServerOptions(hooks)...)
	a.mcp = server.NewMCPServer(c.Name, s.deps.Config.Version, opts...)
	a.registerTools(k)
	d := endpoint.Deps{Agent: a.Name, Requests: s.deps.CallerRequests,
		MCP: server.NewStreamableHTTPServer(a.mcp,
			server.WithStateLess(true),
			// Behind nginx/Caddy the Host is not loopback; the gateway guards by Origin instead.
			server.WithDisableLocalhostProtection(true),
			server.WithStreamableHTTPLogger(mcpclient.SlogLogger(a.log)),
		)}
	d.Route = a.route
	k.Endpoint(&d)
	a.handler = endpoint.New(d)
	return a, nil
}

// route reports why a tools/call of name cannot be dispatched (nil: it
// can); the endpoint answers that itself instead of mcp-go's "tool 'x' not
// found: tool not found". A refusal is audited (callaudit.go).
func (a *Agent) route(ctx context.Context, name string, inbound http.Header) error {
	var err error
	switch {
	case a.router != nil:
		err = a.router.Route(ctx, name, inbound)
	case a.mcp.GetTool(name) == nil:
		err = fmt.Errorf("tool %q not found", name)
	}
	if err != nil {
		a.auditRefusal(ctx, name, err)
	}
	return err
}

// Handler is the agent's Streamable HTTP endpoint (agents/endpoint).
func (a *Agent) Handler() http.Handler { return a.handler }

// registerTools adds the kind's tools, prompts and resources and
// get_health to the agent's MCP server.
func (a *Agent) registerTools(k Kind) {
	health := k.Register(a.mcp) // a proxy's: a downstream tool named get_health wins
	if health == nil {
		health = a.handleHealth
	}
	tool := mcp.NewToolWithRawSchema("get_health", "Returns the health status of this agent and its downstream dependencies.", json.RawMessage(healthSchema))
	// It reads and changes nothing; asked twice, it answers alike (cached).
	tool.Annotations.ReadOnlyHint, tool.Annotations.IdempotentHint = mcp.ToBoolPtr(true), mcp.ToBoolPtr(true)
	a.mcp.AddTool(tool, health)
}

// self is the agent's identity as its MCP server gives it.
func (a *Agent) self() mcp.Implementation {
	return mcp.Implementation{Name: a.Name, Version: a.set.deps.Config.Version, Title: a.Config.Title, Description: a.Config.Description}
}

// ToolDescription is the description of the agent's send_message (or its
// tool_name), as its MCP server and the agents that call it as a tool
// offer it.
func (a *Agent) ToolDescription() string {
	if a.Config.Description != "" {
		return fmt.Sprintf("Send a message to %s: %s", a.Config.Title, a.Config.Description)
	}
	return "Send a message to " + a.Config.Title + "."
}

// request is what the gateway put in the context of an HTTP request for
// the agents: one typed value under one key.
type request struct {
	id      string                  // the request id (WithRequestID)
	allowed func(agent string) bool // the agents the caller may use (Directory.Serve), or nil
}

func requestOf(ctx context.Context) request { return ctxvalue.Of[request](ctx) }

func withRequest(ctx context.Context, edit func(*request)) context.Context {
	return ctxvalue.With(ctx, edit)
}

// WithRequestID stores the request id for agents to log and report.
func WithRequestID(ctx context.Context, id string) context.Context {
	return withRequest(ctx, func(r *request) { r.id = id })
}

// RequestID returns the request id of ctx or "".
func RequestID(ctx context.Context) string { return requestOf(ctx).id }

// handleSendMessage is send_message as mcp-go serves it (registered
// through endpoint.ToolHandler, which makes wc).
func (a *Agent) handleSendMessage(ctx context.Context, wc *wire.Call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return a.sendMessage(ctx, req, wc)
}

// answerSendMessage is send_message for the fast path's call c: its
// notifications go to c's stream, and the downstream tools/calls of its
// tool loops add c's members and take their requests to the caller to c's
// round-trip state (the input-required bridge's).
func (a *Agent) answerSendMessage(ctx context.Context, c *wire.Call) (*mcp.CallToolResult, error) {
	return a.sendMessage(ctx, c.Req, c)
}

// sendMessage runs send_message for wc, the fast path's call or mcp-go's
// handler's (endpoint.ToolHandler): where its notifications go, the members the downstream
// tools/calls of its tool loops add, and its round-trip state
// (wc.Rounds; nil: not bridged).
func (a *Agent) sendMessage(ctx context.Context, req mcp.CallToolRequest, wc *wire.Call) (*mcp.CallToolResult, error) {
	start := time.Now()
	m := a.set.deps.Metrics
	rid := RequestID(ctx)
	progress := newReporter(ctx, wc, req.Params.Meta, m)
	// The call's fields are passed to each line rather than bound with
	// Logger.With, which copies the encoder and a 1 KB buffer per call.
	ridField, toolField := zap.String("request_id", rid), zap.String("tool", a.Config.ToolName)
	skipped := map[string]int{} // reason → count; one log line per call, not per entry
	turn, err := parseTurnFor(req.GetArguments(), a.set.deps.Config.Limits.MaxHistoryEntries, a.set.deps.Config.Limits.MaxImageBytes, a.Config.Overrides.System,
		func(_ int, reason string) { skipped[reason]++ })
	var ov *callOverrides
	if err == nil {
		ov, err = parseOverrides(req.GetArguments(), a.Config.Overrides, a.set.deps.Config.ProviderType(a.Config.Model))
	}
	for reason, n := range skipped {
		m.HistorySkipped.WithLabelValues(a.Name, reason).Add(float64(n))
	}
	if len(skipped) > 0 {
		a.log.Warn("skipped history entries", ridField, toolField, zap.Any("skipped", skipped))
	}
	if err != nil {
		a.observe(policy.CallerFrom(ctx), a.Config.ToolName, "error", start)
		a.auditCall(ctx, rid, policy.CallerFrom(ctx), "error", 0, start)
		return mcp.NewToolResultError(fmt.Sprintf("%v (request id %s)", err, rid)), nil
	}
	notify, _ := wc.Notifier(ctx, true)
	var rounds wire.Rounds
	if wc != nil {
		rounds = wc.Rounds
	}
	call := &Call{Turn: turn, Inbound: req.Header, Progress: progress, RequestID: rid, Caller: policy.CallerFrom(ctx), overrides: ov,
		extras: mcpclient.ExtrasOf(wc), Rounds: rounds, notify: notify, sink: wc.Stream()}
	answer, err := a.Run(ctx, call)
	progress.flush(2 * time.Second)
	outcome := outcomeOf(ctx, err)
	a.observe(call.Caller, a.Config.ToolName, outcome, start)
	a.auditCall(ctx, rid, call.Caller, outcome, len(answer), start) // callaudit.go
	a.log.Info("send_message", ridField, toolField, zap.String("conversation_id", turn.ConversationID),
		zap.String("outcome", outcome), zap.Int64("duration_ms", time.Since(start).Milliseconds()),
		zap.Int("history", len(turn.History)), zap.Error(err), tracing.LogField(ctx))
	if errors.Is(err, quota.ErrExceeded) || errors.Is(err, quota.ErrStore) {
		// Over a limit: a JSON-RPC error, which tells a caller (and a model
		// calling this agent as a tool) when to try again; not a failure of
		// the agent.
		return nil, fmt.Errorf("%s: %w (request id %s)", a.Name, err, rid)
	}
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("%s: %v (request id %s)", a.Name, err, rid)), nil
	}
	return mcp.NewToolResultText(answer), nil
}

// Run executes the agent for one call, bounded by the agent's timeout. It is
// also how other agents call this one in-process.
func (a *Agent) Run(ctx context.Context, c *Call) (string, error) {
	if a.run == nil { // config validation refuses such a sub-agent
		return "", fmt.Errorf("agent %s is kind %s, which has no %s", a.Name, a.Config.Kind, config.DefaultToolName)
	}
	if err := a.admit(ctx, c); err != nil {
		return "", err
	}
	ctx, span := tracing.Start(ctx, trace.SpanKindInternal, tracing.OpInvokeAgent, a.Name)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.GenAIOperation.String(tracing.OpInvokeAgent), tracing.GenAIAgentName.String(a.Name))
	}
	ctx, cancel := context.WithTimeout(ctx, a.Config.Timeout)
	defer cancel()
	answer, err := a.run.Run(ctx, c)
	if err == nil && c.Depth == 0 {
		c.Progress.Done(a.Name + ": done")
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("agent timeout %s exceeded: %w", a.Config.Timeout, err)
	}
	tracing.Fail(span, err, outcomeOf(ctx, err))
	return answer, err
}

// recoverCall, deferred on a goroutine that a call starts, turns a panic
// there into an error for the call (fail), logged with its stack: net/http
// recovers the handler's own goroutine only, and a panic on any other ends
// the process.
func (a *Agent) recoverCall(rid, what string, fail func(error)) {
	if p := recover(); p != nil {
		a.recovered(rid, what, p, fail)
	}
}

// recovered logs the panic p recovered in what and fails the call.
func (a *Agent) recovered(rid, what string, p any, fail func(error)) {
	a.log.Error("panic in "+what, zap.String("request_id", rid), zap.Any("panic", p), zap.Stack("stack"))
	fail(fmt.Errorf("internal error in %s", what)) // the caller's answer names the request id
}

// observe counts one call of the agent's own tool; caller is the caller's
// policy key, kept as the label only when the config names it.
func (a *Agent) observe(caller, tool, outcome string, start time.Time) {
	m := a.set.deps.Metrics
	m.ToolCalls.WithLabelValues(a.Name, tool, outcome, a.set.deps.Callers.Label(caller)).Inc()
	m.ToolCallDuration.WithLabelValues(a.Name, tool).Observe(time.Since(start).Seconds())
}

func outcomeOf(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, errDenied):
		return "denied"
	}
	return "error"
}

var errDenied = errors.New("denied by policy")
