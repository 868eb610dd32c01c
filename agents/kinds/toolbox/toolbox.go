// Package toolbox is the toolbox kind of agent: no
// LLM. Four tools let a client discover and call the tools of the agent's
// servers on demand: list_servers, get_server_tools, search_tools (ranked by
// package toolsearch) and execute_tool, filtered by the agent's tools.allow/deny and the caller rule;
// run_script (script.go) calls many of them from one script.
// The caller identity is the auth token's name; in passthrough mode the
// tools also take an optional agent_id argument that is used as the
// identity instead (in tokens mode an authenticated identity is never
// overridden by an argument). Errors are isError results with text
// "CODE: message" and structuredContent {"error": {"code", "message"}};
// execute_tool returns the downstream result unchanged. Every call writes
// one audit line.
//
// It owns the three tools and their policy checks; it registers itself as
// a kind (kind.go), is handed what it needs of its agent as the agent's
// agents.Host (Deps) and registers its tools on the agent's mcp-go server.
// It does not serve HTTP, build agents or compose headers itself: the
// agents core builds it by its factory, and the endpoint carries its calls.
package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"slices"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// Error codes of toolbox results.
const (
	CodeDenied          = "DENIED_BY_POLICY"
	CodeUnavailable     = "SERVER_UNAVAILABLE"
	CodeToolNotFound    = "TOOL_NOT_FOUND"
	CodeTimeout         = "TIMEOUT"
	CodeInvalidArgument = "INVALID_ARGUMENTS"
)

// toolboxError is a failure reported to the caller as a coded result.
type toolboxError struct{ code, msg string }

func (e *toolboxError) Error() string { return e.code + ": " + e.msg }

func tbErr(code, format string, args ...any) *toolboxError {
	return &toolboxError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (e *toolboxError) result() *mcp.CallToolResult {
	r := mcp.NewToolResultStructured(map[string]any{"error": map[string]any{"code": e.code, "message": e.msg}}, e.Error())
	r.IsError = true
	return r
}

// Deps is what the toolbox is handed of its agent.
type Deps struct {
	agents.Host
	Agent       string             // the agent's name
	Self        mcp.Implementation // the agent's identity as its MCP server gives it
	Servers     []string           // the agent's servers, in config order
	Tools       config.ToolRules   // the agent's tools.allow/deny
	Transports  map[string]*config.Server
	Passthrough bool // auth.mode passthrough: agent_id names the caller
	Logger      *zap.Logger
	Downstream  mcpclient.Downstream
	Callers     *policy.CallerPolicy
	Auditor     *policy.Auditor
	// GatewayStatus, when enabled, adds get_gateway_status, answering
	// Host.Status to the callers it allows.
	GatewayStatus *config.GatewayStatus
	// Script runs run_script (script.go); nil: not offered.
	Script *codemode.Runner
	// SearchEmbedder adds a ranking by embeddings to search_tools
	// (tool_search.embeddings), its tools' vectors kept in SearchVectors
	// (nil: the index's own); nil: lexical ranking only.
	SearchEmbedder toolsearch.Embedder
	SearchVectors  *toolsearch.Vectors
}

type toolbox struct {
	d      Deps
	filter policy.ToolFilter
	status policy.Globs      // who may call get_gateway_status; empty: every caller
	index  *toolsearch.Index // search_tools (search.go)
}

// tbCall is one toolbox call: who, what, and the policy decision reached.
type tbCall struct {
	tool     string // toolbox tool
	caller   string
	server   string
	target   string // downstream tool, or the toolbox tool for audit
	decision policy.Decision
	start    time.Time
	timeout  time.Duration // execute_tool's timeout_ms; 0: none
	deadline time.Time     // when timeout_ms ends the call
	wc       *wire.Call    // the fast path's call (fast.go) or mcp-go's handler's (handle)
}

// Register adds the toolbox's tools to srv, the agent's server, and
// returns execute_tool as the fast path's Target (fast.go).
func Register(srv *server.MCPServer, d Deps) *Target {
	f, err := policy.NewToolFilter(d.Tools.Allow, d.Tools.Deny)
	if err != nil {
		// Config validation rejects bad globs; should one get here, fail closed.
		d.Logger.Error("toolbox tools filter invalid; every tool is denied", zap.Error(err))
		f = policy.ToolFilter{Deny: mustGlobs("*")}
	}
	f.Name = "agents." + d.Agent + ".tools"
	tb := &toolbox{d: d, filter: f, index: toolsearch.New()}
	if d.SearchEmbedder != nil {
		tb.index.UseEmbeddings(d.SearchEmbedder, d.SearchVectors)
	}
	srv.AddTool(mcp.NewToolWithRawSchema("list_servers",
		"Lists the MCP servers this toolbox can reach for you.", tb.schema(listServersSchema)), tb.handle("list_servers", tb.listServers))
	srv.AddTool(mcp.NewToolWithRawSchema("get_server_tools",
		"Returns the definitions of a server's tools you may call, optionally only the named ones or those matching a wildcard pattern, within a schema token budget.",
		tb.schema(getServerToolsSchema)), tb.handle("get_server_tools", tb.getServerTools))
	srv.AddTool(mcp.NewToolWithRawSchema(toolsearch.ToolName, toolsearch.ToolDescription, tb.schema(toolsearch.ToolSchema)),
		tb.handle(toolsearch.ToolName, tb.searchTools)) // search.go
	srv.AddTool(mcp.NewToolWithRawSchema(executeToolName,
		"Calls a tool of a server with arguments and returns its result unchanged.", tb.schema(executeToolSchema)),
		tb.handle(executeToolName, tb.executeTool))
	if d.Script != nil {
		tb.registerScript(srv) // script.go
	}
	if gs := d.GatewayStatus; gs != nil && gs.Enabled && d.HasStatus() {
		g, err := policy.CompileGlobs(gs.Callers)
		if err != nil { // config validation rejects bad globs; fail closed
			g = mustGlobs("\x00none")
		}
		tb.status = g
		srv.AddTool(mcp.NewToolWithRawSchema(StatusTool,
			"Returns the gateway's status: its config file and hash, agents, listeners, reloads and warnings (what GET /-/status answers).",
			tb.schema(listServersSchema)), tb.handle(StatusTool, tb.gatewayStatus))
	}
	return &Target{tb: tb}
}

// StatusTool is the name of the toolbox's diagnostic tool.
const StatusTool = "get_gateway_status"

// gatewayStatus answers the gateway's status document to the callers
// gateway_status.callers allows.
func (tb *toolbox) gatewayStatus(_ context.Context, c *tbCall, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !tb.status.Empty() {
		rule := "agents." + tb.d.Agent + ".gateway_status.callers"
		d := policy.Decision{Allowed: true, Reason: policy.ReasonAllowed, Rule: rule}
		if !tb.status.Match(c.caller) {
			d = policy.Decision{Reason: policy.ReasonToolNotAllowed, Rule: rule}
		}
		if err := tb.check(c, d, "caller %q may not see the gateway status", c.caller); err != nil {
			return nil, err
		}
	}
	st := tb.d.Status()
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the status: %w", err)
	}
	var structured map[string]any
	_ = json.Unmarshal(b, &structured)
	return mcp.NewToolResultStructured(structured, string(b)), nil
}

func mustGlobs(p ...string) policy.Globs {
	g, _ := policy.CompileGlobs(p)
	return g
}

const (
	listServersSchema    = `{"type":"object","properties":{},"additionalProperties":false}`
	getServerToolsSchema = `{"type":"object","properties":{
  "server":{"type":"string","description":"Server name, as list_servers returns it."},
  "names":{"type":"array","items":{"type":"string"},"description":"Only these tools."},
  "pattern":{"type":"string","description":"Only tools whose name matches this wildcard pattern, e.g. get_* ."},
  "max_schema_tokens":{"type":"integer","minimum":1,"description":"Budget for the returned definitions, estimated as JSON length / 4; past it the list is cut and truncated is true."}},
  "required":["server"],"additionalProperties":false}`
	executeToolSchema = `{"type":"object","properties":{
  "server":{"type":"string","description":"Server name, as list_servers returns it."},
  "tool":{"type":"string","description":"Tool name, as get_server_tools returns it."},
  "args":{"type":"object","description":"The tool's arguments."},
  "timeout_ms":{"type":"integer","minimum":1,"description":"Give up after this many milliseconds (TIMEOUT)."}},
  "required":["server","tool"],"additionalProperties":false}`
	agentIDProperty = `{"type":"string","description":"Your agent identity, used for the access rules."}`
)

// schema adds the agent_id argument in passthrough mode.
func (tb *toolbox) schema(raw string) json.RawMessage {
	if !tb.d.Passthrough {
		return json.RawMessage(raw)
	}
	var s map[string]any
	_ = json.Unmarshal([]byte(raw), &s)
	props := s["properties"].(map[string]any)
	var id any
	_ = json.Unmarshal([]byte(agentIDProperty), &id)
	props["agent_id"] = id
	b, _ := json.Marshal(s)
	return b
}

// maxAgentID bounds the agent_id a client may name itself with (it goes
// into every audit line).
const maxAgentID = 256

type tbHandler func(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error)

// handle wraps a toolbox tool: identity and agent rule first, then the
// tool, then one audit line and the metrics, whatever happened. mcp-go
// runs it with the call value endpoint.ToolHandler makes (wc).
func (tb *toolbox) handle(name string, h tbHandler) server.ToolHandlerFunc {
	return endpoint.ToolHandler(func(ctx context.Context, wc *wire.Call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := newCall(name)
		c.wc = wc
		return tb.handled(ctx, c, req, h)
	})
}

// handled is call c of h with req, its error a coded result.
func (tb *toolbox) handled(ctx context.Context, c *tbCall, req mcp.CallToolRequest, h tbHandler) (*mcp.CallToolResult, error) {
	res, err := tb.run(ctx, c, req, h)
	return tb.settle(ctx, c, res, nil, err), nil
}

func newCall(tool string) *tbCall {
	return &tbCall{tool: tool, target: tool, start: time.Now(), decision: policy.Decision{Allowed: true, Reason: policy.ReasonAllowed}}
}

// settle ends a call: an error becomes its coded result, and one audit line
// and the metrics record the outcome. A raw result (raw, with res nil) is
// measured as the downstream sent it; settle then returns nil, and the
// caller answers raw.
func (tb *toolbox) settle(ctx context.Context, c *tbCall, res *mcp.CallToolResult, raw *mcpclient.RawResult, err error) *mcp.CallToolResult {
	outcome, size := "ok", 0
	var tberr *toolboxError
	switch {
	case errors.As(err, &tberr):
		res, raw, outcome = tberr.result(), nil, tbOutcome(tberr.code)
	case err != nil:
		res, raw, outcome = (&toolboxError{CodeUnavailable, err.Error()}).result(), nil, "error"
	case raw != nil:
		size = len(raw.JSON)
		if raw.IsError {
			outcome = "error"
		}
	case res.IsError:
		outcome = "error"
	}
	if raw == nil {
		b, _ := json.Marshal(res)
		size = len(b)
	}
	tb.d.Auditor.Record(ctx, policy.AuditEvent{RequestID: tb.d.RequestID(ctx), Caller: c.caller, Agent: tb.d.Agent,
		Server: c.server, Tool: c.target, Decision: c.decision, Latency: time.Since(c.start),
		Outcome: policy.AuditOutcome(outcome), ResultBytes: size})
	tb.d.Observe(c.caller, c.tool, outcome, c.start)
	return res
}

func tbOutcome(code string) string {
	switch code {
	case CodeDenied:
		return "denied"
	case CodeTimeout:
		return "timeout"
	}
	return "error"
}

func (tb *toolbox) run(ctx context.Context, c *tbCall, req mcp.CallToolRequest, h tbHandler) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	c.caller = policy.CallerFrom(ctx)
	if tb.d.Passthrough {
		switch id := args["agent_id"].(type) {
		case nil:
		case string:
			if len(id) > maxAgentID {
				return nil, tbErr(CodeInvalidArgument, "agent_id is longer than %d bytes", maxAgentID)
			}
			if id != "" {
				c.caller = id
				ctx = sessions.WithAgentID(ctx, id) // its downstream sessions (session_scope caller)
			}
		default:
			return nil, tbErr(CodeInvalidArgument, "agent_id must be a string")
		}
	}
	if err := tb.check(c, tb.d.Callers.MissingIdentity(c.caller), "a caller identity is required"); err != nil {
		return nil, err
	}
	if err := tb.check(c, tb.d.Callers.AllowAgent(c.caller, tb.d.Agent), "caller %q may not use agent %s", c.caller, tb.d.Agent); err != nil {
		return nil, err
	}
	return h(ctx, c, req)
}

// check records d and turns a refusal into DENIED_BY_POLICY.
func (tb *toolbox) check(c *tbCall, d policy.Decision, format string, args ...any) error {
	c.decision = d
	if d.Allowed {
		return nil
	}
	return tbErr(CodeDenied, "%s (%s)", fmt.Sprintf(format, args...), d.Reason)
}

// serverArg resolves and authorises the server argument.
func (tb *toolbox) serverArg(c *tbCall, args map[string]any) error {
	srv, ok := args["server"].(string)
	if !ok || srv == "" {
		return tbErr(CodeInvalidArgument, "server is required and must be a string")
	}
	c.server = srv
	if !slices.Contains(tb.d.Servers, srv) {
		return tbErr(CodeUnavailable, "no server %q is available to %s; list_servers shows the servers you may use", srv, tb.d.Agent)
	}
	return tb.check(c, tb.d.Callers.AllowServer(c.caller, srv), "caller %q may not use server %s", c.caller, srv)
}

// decideTool applies the agent's tools filter, then the caller rule.
func (tb *toolbox) decideTool(caller, srv, tool string) policy.Decision {
	return tb.d.Callers.DecideTool(tb.filter, caller, srv, tool)
}

func (tb *toolbox) listServers(_ context.Context, c *tbCall, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	servers := []map[string]any{}
	for _, srv := range tb.d.Servers {
		if !tb.d.Callers.AllowServer(c.caller, srv).Allowed {
			continue
		}
		entry := map[string]any{"name": srv}
		if sc := tb.d.Transports[srv]; sc != nil {
			entry["transport"] = transportOf(sc.Transport)
		}
		servers = append(servers, entry)
	}
	return structured(map[string]any{"servers": servers}), nil
}

func transportOf(t string) string {
	if t == "" {
		return mcpclient.TransportHTTP
	}
	return t
}

func structured(v map[string]any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return mcp.NewToolResultStructured(v, string(b))
}

// tbFilter is the names/pattern/budget arguments of get_server_tools.
type tbFilter struct {
	names   map[string]bool // nil: any
	pattern string
	budget  int // 0: none
}

func parseToolsFilter(args map[string]any) (tbFilter, error) {
	var f tbFilter
	if raw, ok := args["names"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return f, tbErr(CodeInvalidArgument, "names must be an array of strings")
		}
		f.names = make(map[string]bool, len(list))
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return f, tbErr(CodeInvalidArgument, "names must be an array of strings")
			}
			f.names[s] = true
		}
	}
	if raw, ok := args["pattern"]; ok && raw != nil {
		s, ok := raw.(string)
		if !ok || s == "" {
			return f, tbErr(CodeInvalidArgument, "pattern must be a non-empty string")
		}
		if _, err := path.Match(s, ""); err != nil {
			return f, tbErr(CodeInvalidArgument, "pattern %q: %v", s, err)
		}
		f.pattern = s
	}
	if raw, ok := args["max_schema_tokens"]; ok && raw != nil {
		n, ok := positiveInt(raw)
		if !ok {
			return f, tbErr(CodeInvalidArgument, "max_schema_tokens must be a positive integer")
		}
		f.budget = n
	}
	return f, nil
}

// positiveInt reads a JSON number that is a whole number ≥ 1.
func positiveInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func (f tbFilter) match(name string) bool {
	if f.names != nil && !f.names[name] {
		return false
	}
	if f.pattern != "" {
		ok, _ := path.Match(f.pattern, name)
		return ok
	}
	return true
}

func (tb *toolbox) getServerTools(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	if err := tb.serverArg(c, args); err != nil {
		return nil, err
	}
	f, err := parseToolsFilter(args)
	if err != nil {
		return nil, err
	}
	tools, err := tb.visibleTools(ctx, c.caller, c.server, req.Header)
	if err != nil {
		return nil, tb.downstreamError(ctx, c, err)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	defs := []map[string]any{}
	available, used, truncated := len(tools), 0, false
	for _, t := range tools {
		if !f.match(t.Name) || truncated {
			continue
		}
		def := map[string]any{"name": t.Name, "description": t.Description, "inputSchema": toolsearch.InputSchema(t)}
		cost := schemaTokens(def)
		if f.budget > 0 && used+cost > f.budget {
			truncated = true // in name order: the first tool past the budget ends the list
			continue
		}
		used += cost
		defs = append(defs, def)
	}
	out := map[string]any{"server": c.server, "tools": defs, "total_available": available, "returned": len(defs),
		"tokens_used": used, "truncated": truncated}
	if f.budget > 0 {
		out["max_schema_tokens"] = f.budget
	}
	return structured(out), nil
}

// visibleTools lists the tools of srv that caller may see: the list
// get_server_tools and search_tools both answer from.
func (tb *toolbox) visibleTools(ctx context.Context, caller, srv string, inbound http.Header) ([]mcp.Tool, error) {
	hdr, err := tb.d.Outbound(ctx, srv, inbound, nil)
	if err != nil {
		return nil, err
	}
	tools, err := tb.d.Downstream.Tools(ctx, srv, hdr)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(tools, func(t mcp.Tool) bool { return !tb.decideTool(caller, srv, t.Name).Allowed }), nil
}

// schemaTokens estimates the tokens of a tool definition: JSON length / 4,
// rounded up.
func schemaTokens(def map[string]any) int {
	b, _ := json.Marshal(def)
	return (len(b) + 3) / 4
}

func (tb *toolbox) executeTool(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	toolArgs := map[string]any{}
	if raw, ok := args["args"]; ok && raw != nil {
		if toolArgs, ok = raw.(map[string]any); !ok {
			return nil, tbErr(CodeInvalidArgument, "args must be an object")
		}
	}
	return execute(tb, ctx, c, req, args, func(ctx context.Context, hdr http.Header, onProgress mcpclient.ProgressFunc, relay *mcpclient.Relay) (*mcp.CallToolResult, error) {
		return tb.d.Downstream.CallTool(ctx, c.server, c.target, toolArgs, hdr, onProgress, mcpclient.CallOptions{Relay: relay})
	})
}

// execute checks an execute_tool call (prepareExecute) and makes its
// downstream call, typed or raw, with the call's headers, progress and
// relay; a downstream's error becomes the toolbox's.
func execute[T any](tb *toolbox, ctx context.Context, c *tbCall, req mcp.CallToolRequest, args map[string]any,
	do func(ctx context.Context, hdr http.Header, onProgress mcpclient.ProgressFunc, relay *mcpclient.Relay) (T, error)) (T, error) {
	var zero T
	call, err := tb.prepareExecute(ctx, c, req, args)
	if err != nil {
		return zero, err
	}
	defer call.cancel()
	relay, onProgress, done := tb.d.Relay(call.ctx, c.wc, call.token)
	res, err := do(call.ctx, call.hdr, onProgress, relay)
	done()
	if err != nil {
		return zero, tb.downstreamError(ctx, c, err)
	}
	return res, nil
}

// execCall is an execute_tool call checked and ready to go downstream.
type execCall struct {
	ctx    context.Context // the call's, with its timeout_ms
	cancel context.CancelFunc
	hdr    http.Header // what the server receives
	token  mcp.ProgressToken
}

// prepareExecute checks an execute_tool call's arguments (all but args,
// which the two paths read each their own way) and its policy, and finds
// the tool on its server.
func (tb *toolbox) prepareExecute(ctx context.Context, c *tbCall, req mcp.CallToolRequest, args map[string]any) (*execCall, error) {
	tool, ok := args["tool"].(string)
	if !ok || tool == "" {
		return nil, tbErr(CodeInvalidArgument, "tool is required and must be a string")
	}
	c.target = tool
	if err := tb.serverArg(c, args); err != nil {
		return nil, err
	}
	var timeout time.Duration
	if raw, ok := args["timeout_ms"]; ok && raw != nil {
		ms, ok := positiveInt(raw)
		if !ok {
			return nil, tbErr(CodeInvalidArgument, "timeout_ms must be a positive integer")
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	if err := tb.check(c, tb.decideTool(c.caller, c.server, tool), "tool %s of server %s is denied for caller %q", tool, c.server, c.caller); err != nil {
		return nil, err
	}
	call := &execCall{ctx: ctx, cancel: func() {}}
	if timeout > 0 {
		call.ctx, call.cancel = context.WithTimeout(ctx, timeout)
		c.timeout, c.deadline = timeout, time.Now().Add(timeout)
	}
	var err error
	if call.hdr, err = tb.d.Outbound(call.ctx, c.server, req.Header, nil); err != nil {
		call.cancel()
		return nil, tb.downstreamError(ctx, c, err)
	}
	tools, err := tb.d.Downstream.Tools(call.ctx, c.server, call.hdr)
	if err != nil {
		call.cancel()
		return nil, tb.downstreamError(ctx, c, err)
	}
	if !slices.ContainsFunc(tools, func(t mcp.Tool) bool { return t.Name == tool }) {
		call.cancel()
		if err := tb.d.Downstream.Hidden(c.server, tool); err != nil { // pinned and not approved: say so
			return nil, tb.downstreamError(ctx, c, err)
		}
		return nil, tbErr(CodeToolNotFound, "server %s has no tool %q; get_server_tools lists them", c.server, tool)
	}
	if req.Params.Meta != nil {
		call.token = req.Params.Meta.ProgressToken
	}
	return call, nil
}

// downstreamError maps a downstream failure onto a toolbox code.
func (tb *toolbox) downstreamError(ctx context.Context, c *tbCall, err error) error {
	rid := tb.d.RequestID(ctx)
	tb.d.Rejected(ctx, c.server, err)
	tb.d.Logger.Warn("toolbox downstream call failed", zap.String("request_id", rid), zap.String("caller", c.caller),
		zap.String("server", c.server), zap.String("tool", c.target), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
	switch {
	case errors.Is(err, pins.ErrAwaitsApproval), errors.Is(err, pins.ErrRejected):
		return tbErr(CodeDenied, "%v (request id %s)", err, rid)
	case errors.Is(err, context.DeadlineExceeded):
		if c.timeout > 0 && !time.Now().Before(c.deadline) {
			return tbErr(CodeTimeout, "server %s did not answer within timeout_ms %d (%s) (request id %s)", c.server, c.timeout.Milliseconds(), c.timeout, rid)
		}
		// The server's own timeout (mcp.servers.<name>.timeout), which the
		// error names.
		return tbErr(CodeTimeout, "server %s did not answer in time: %v (request id %s)", c.server, err, rid)
	case errors.Is(err, mcp.ErrInvalidParams):
		return tbErr(CodeInvalidArgument, "server %s rejected the arguments: %v (request id %s)", c.server, err, rid)
	case errors.Is(err, mcp.ErrMethodNotFound):
		return tbErr(CodeToolNotFound, "server %s: %v (request id %s)", c.server, err, rid)
	}
	return tbErr(CodeUnavailable, "server %s: %v (request id %s)", c.server, err, rid)
}
