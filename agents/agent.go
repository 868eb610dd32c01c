package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/proxy"
	"github.com/pallasgw/pallasgw/agents/toolbox"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
)

// Agent is one served agent: its config, its MCP server and HTTP handler,
// and the runner of its kind.
type Agent struct {
	Name    string
	Config  *config.Agent
	set     *Set
	mcp     *server.MCPServer
	handler *endpoint.Endpoint
	run     runner
	log     *zap.Logger
	health  healthCache
	latency *latencyWindow // durations of the agent's recent model calls (get_health)
	proxy   *proxy.Proxy   // kind proxy only
	// executeTool is a toolbox's execute_tool (kind toolbox only).
	executeTool *toolbox.Target
}

// runner executes one send_message for a kind.
type runner interface {
	run(ctx context.Context, c *Call) (string, error)
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
	extras *mcpclient.CallExtras
	// notify sends a notification to the caller (wire.Call.Notifier, "_meta"
	// kept), the caller's call's; sub-calls keep it. nil: none.
	notify func(method string, params map[string]any) error
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
	r, err := newRunner(a)
	if err != nil {
		return nil, err
	}
	a.run = r
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
	if c.Kind == config.KindProxy {
		if a.proxy, err = proxy.New(a.proxyDeps()); err != nil {
			return nil, err
		}
		opts = append(opts, a.proxy.ServerOptions(hooks)...)
	}
	a.mcp = server.NewMCPServer(c.Name, s.deps.Config.Version, opts...)
	a.registerTools()
	d := endpoint.Deps{Agent: a.Name, Requests: s.deps.CallerRequests,
		MCP: server.NewStreamableHTTPServer(a.mcp,
			server.WithStateLess(true),
			// Behind nginx/Caddy the Host is not loopback; the gateway guards by Origin instead.
			server.WithDisableLocalhostProtection(true),
			server.WithStreamableHTTPLogger(mcpclient.SlogLogger(a.log)),
		)}
	d.Route = a.route
	switch {
	case a.proxy != nil:
		d.Fast, d.SetLevel, d.Rounds, d.Tasks = a.proxy, a.proxy, a.proxy, a.proxy
	case a.executeTool != nil:
		d.Fast, d.Rounds = a.executeTool, a.executeTool
	case a.run != nil:
		d.Fast = endpoint.Tool{Name: c.ToolName, Handler: a.answerSendMessage, Self: a.self()}
		// Every kind with send_message continues from a checkpoint
		// (resume.go), so an input-required round never runs a model turn
		// or a step that has finished twice.
		d.Rounds = d.Fast
	}
	a.handler = endpoint.New(d)
	return a, nil
}

// route reports why a tools/call of name cannot be dispatched (nil: it
// can); the endpoint answers that itself instead of mcp-go's "tool 'x' not
// found: tool not found". A refusal is audited (callaudit.go).
func (a *Agent) route(ctx context.Context, name string, inbound http.Header) error {
	var err error
	switch {
	case a.proxy != nil:
		err = a.proxy.Route(ctx, name, inbound)
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

func (a *Agent) registerTools() {
	health := a.handleHealth
	switch a.Config.Kind {
	case config.KindProxy:
		a.proxy.Register(a.mcp)
		health = a.proxy.CallTool // a downstream tool named get_health wins
	case config.KindToolbox:
		a.executeTool = toolbox.Register(a.mcp, a.toolboxDeps())
	default:
		a.mcp.AddTool(mcp.NewToolWithRawSchema(a.Config.ToolName, a.toolDescription(), sendMessageSchemaFor(a.Config.Overrides)), a.handleSendMessage)
		a.mcp.AddPrompt(mcp.NewPrompt(a.Name+"_history", mcp.WithPromptDescription("Conversation history (always empty: history lives on the client).")),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("History lives on the client; pass it in send_message's history.", []mcp.PromptMessage{}), nil
			})
	}
	tool := mcp.NewToolWithRawSchema("get_health", "Returns the health status of this agent and its downstream dependencies.", json.RawMessage(healthSchema))
	// It reads and changes nothing; asked twice, it answers alike (cached).
	tool.Annotations.ReadOnlyHint, tool.Annotations.IdempotentHint = mcp.ToBoolPtr(true), mcp.ToBoolPtr(true)
	a.mcp.AddTool(tool, health)
}

// toolboxDeps is what the toolbox kind is handed of the agent.
func (a *Agent) toolboxDeps() toolbox.Deps {
	d := a.set.deps
	emb, vecs := a.searchEmbeddings()
	return toolbox.Deps{SearchEmbedder: emb, SearchVectors: vecs, Agent: a.Name, Self: a.self(), Servers: a.Config.Servers, Tools: a.Config.Tools, Transports: d.Config.MCP.Servers,
		Passthrough: d.Config.Auth.Mode == policy.ModePassthrough, Logger: a.log, Downstream: d.Downstream,
		Callers: d.Callers, Auditor: d.Auditor, Outbound: a.set.outbound, Rejected: a.set.upstreamRejected, Observe: a.observe, RequestID: RequestID,
		GatewayStatus: a.Config.GatewayStatus, Status: d.Status, Script: a.toolboxScript(), Quota: a.scriptRequest,
		Relay: func(ctx context.Context, wc *wire.Call, token mcp.ProgressToken) (*mcpclient.Relay, mcpclient.ProgressFunc, func()) {
			relay := proxy.NewCallRelay(ctx, wc, streamOf(ctx), token, d.Metrics)
			notify, _ := wc.Notifier(ctx, true)
			requests := &mcpclient.Relay{Notify: notify, Request: func(dctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				return a.handler.Request(dctx, sequencer(relay), method, params)
			}}
			return requests, relay.ProgressFunc(), func() {
				relay.Flush(2 * time.Second)
				relay.End()
			}
		}}
}

// proxyDeps is what the proxy kind is handed of the agent.
func (a *Agent) proxyDeps() proxy.Deps {
	d := a.set.deps
	emb, vecs := a.searchEmbeddings()
	return proxy.Deps{SearchEmbedder: emb, SearchVectors: vecs, Agent: a.Name, Self: a.self(), Servers: a.Config.Servers, Tools: a.Config.Tools, Logger: a.log,
		Metrics: d.Metrics, Downstream: d.Downstream, Callers: d.Callers, Auditor: d.Auditor, Outbound: a.set.outbound,
		Rejected: a.set.upstreamRejected, Observe: a.observe, Outcome: outcomeOf, RequestID: RequestID, Health: a.handleHealth, StreamOf: streamOf, TaskTag: taskTag(d.CallerRequests),
		TaskIndex: d.TaskIndex, ToolSearch: a.Config.ToolSearch.On(),
		Request: func(ctx context.Context, relay *proxy.Relay, method string, params json.RawMessage) (json.RawMessage, error) {
			return a.handler.Request(ctx, sequencer(relay), method, params) // the endpoint is built after the proxy
		}}
}

// taskTag is c's Tag, or nil without c.
func taskTag(c *endpoint.CallerRequests) func(...string) string {
	if c == nil {
		return nil
	}
	return c.Tag
}

// sequencer is relay as the endpoint takes it: nil stays nil.
func sequencer(relay *proxy.Relay) endpoint.Sequencer {
	if relay == nil {
		return nil
	}
	return relay
}

// streamOf is the tracked response of the request of ctx, or nil.
func streamOf(ctx context.Context) proxy.Stream {
	if t := endpoint.ScopeFrom(ctx).Tracker; t != nil {
		return t
	}
	return nil
}

// self is the agent's identity as its MCP server gives it.
func (a *Agent) self() mcp.Implementation {
	return mcp.Implementation{Name: a.Name, Version: a.set.deps.Config.Version, Title: a.Config.Title, Description: a.Config.Description}
}

func (a *Agent) toolDescription() string {
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

func (a *Agent) handleSendMessage(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return a.sendMessage(ctx, req, nil)
}

// answerSendMessage is send_message for the fast path's call c: its
// notifications go to c's stream, and the downstream tools/calls of its
// tool loops add c's members (the input-required bridge's).
func (a *Agent) answerSendMessage(ctx context.Context, c *wire.Call) (*mcp.CallToolResult, error) {
	return a.sendMessage(ctx, c.Req, c)
}

// sendMessage runs send_message for wc, the fast path's call (nil: mcp-go's
// handler's): where its notifications go, and the members the downstream
// tools/calls of its tool loops add.
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
	call := &Call{Turn: turn, Inbound: req.Header, Progress: progress, RequestID: rid, Caller: policy.CallerFrom(ctx), overrides: ov,
		extras: mcpclient.ExtrasOf(wc), notify: notify}
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
	answer, err := a.run.run(ctx, c)
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
		a.log.Error("panic in "+what, zap.String("request_id", rid), zap.Any("panic", p), zap.Stack("stack"))
		fail(fmt.Errorf("internal error in %s", what)) // the caller's answer names the request id
	}
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

func trimForLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
