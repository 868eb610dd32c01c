// Package proxy is the proxy kind of agent: no LLM. It re-exposes the tools, prompts,
// resources and resource templates of the agent's servers, names prefixed
// "<server>__" when there is more than one server, and returns downstream
// results unchanged.
//
// Design. What a caller may see depends on who calls: the caller policy
// (policy.callers) and the credentials each caller's request forwards
// downstream (the downstream itself may show different tools to different
// credentials). The agent's MCP server is stateless, so every list request
// is answered for its own caller:
//
//   - tools/list, prompts/list, resources/list and resources/templates/list
//     are built per request by the After* hooks of mcp-go, which replace the
//     result with the caller's view. The downstream lists come from the
//     mcpclient Manager, which caches tools per server and outbound header
//     set and drops the cache on notifications/tools/list_changed, so a
//     downstream change shows in the next list without any work here.
//     (mcp-go's WithToolFilter could shape the list too, but it also runs at
//     call time and turns a hidden tool into "tool not found"; policy wants a
//     denied call refused as an audited error result.)
//   - mcp-go dispatches tools/call and prompts/get by name through its
//     registry, so the registry holds one entry per exposed name, all with
//     the same forwarding handler: names are registered as the views are
//     built, and a call of a name not registered yet (a client that did not
//     list since the last reload) registers it in the Before hook once a
//     listing for that caller shows it exists. The registry only grows by
//     names the downstream servers offer. resources/read goes through one
//     catch-all template ({+uri}); URIs outside what that template matches
//     are registered exactly, again only when a listing shows them.
//   - tools/call, the hot path, costs two map lookups, the policy check and
//     the outbound header composition on top of the downstream call: no
//     listing, no allocation per downstream tool. A plain call does not go
//     through mcp-go's server at all (fast.go).
//
// The handlers decide: the agent's tools.allow/deny (globs on
// "<server>__<tool>", also for a single server whose names carry no prefix)
// and the caller rule. A denied tool is hidden from tools/list and refused
// at call time with an isError result; every call is audited.
//
// Log levels, log messages, elicitation, sampling and roots requests are
// relayed as caller.go describes. Not relayed, answered as an mcp-go stateless server does:
// resources/(un)subscribe are acknowledged but not forwarded
// (notifications/resources/updated cannot reach a caller of a stateless
// endpoint); completion/complete answers an empty completion.
//
// The tasks extension (task-augmented tools/call, tasks/get, tasks/result,
// tasks/cancel, tasks/list) is routed to the downstream that owns the task
// by an id that names its server; tasks.go says how.
//
// An answer is plain JSON unless something streams before it (progress,
// logging, a server-to-client request), as mcp-go and the downstreams
// answer: a client parses a JSON answer for about half the CPU of the same
// answer framed as an SSE event.

// It owns the proxy's names, views and forwarding; the relay of a call's
// notifications is agents/relay. It registers itself as a kind
// (kind.go) and is handed what it needs of its agent as the agent's
// agents.Host (Deps). It does not serve HTTP, build agents or compose
// headers itself: the agents core builds it by its factory, and the
// endpoint carries its calls.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
)

// Deps is what the proxy is handed of its agent: its Host (what it calls
// of the gateway) and what it reads of the agent's config.
type Deps struct {
	agents.Host
	Agent      string             // the agent's name
	Self       mcp.Implementation // the agent's identity as its MCP server gives it
	Servers    []string           // the agent's servers, in config order
	Tools      config.ToolRules   // the agent's tools.allow/deny
	Logger     *zap.Logger
	Metrics    *metrics.Metrics
	Downstream mcpclient.Downstream
	Callers    *policy.CallerPolicy
	Auditor    *policy.Auditor
	// TaskIndex, if set, records the tasks callers create for every
	// replica's tasks/list (tasks.go); nil keeps them to this replica.
	TaskIndex agents.TaskIndex
	// ToolSearch adds search_tools (search.go).
	ToolSearch bool
	// SearchEmbedder adds a ranking by embeddings to search_tools
	// (tool_search.embeddings), its tools' vectors kept in SearchVectors
	// (nil: the index's own); nil: lexical ranking only.
	SearchEmbedder toolsearch.Embedder
	SearchVectors  *toolsearch.Vectors
}

// Proxy is the state of one proxy agent. Its maps only grow by names the
// downstream servers list.
type Proxy struct {
	d      Deps
	srv    *server.MCPServer // the agent's, from Register
	filter policy.ToolFilter
	prefix bool // more than one server: names are "<server>__<name>"

	infoOnce sync.Once       // guards info
	info     json.RawMessage // the agent's identity for 2026-07-28 results (wire.RawResponse)

	tools   sync.Map // exposed tool name → route
	prompts sync.Map // exposed prompt name → route

	regMu      sync.Mutex
	registered sync.Map // exposed tool names in the mcp-go registry
	promptsReg sync.Map // exposed prompt names in the mcp-go registry
	exactURIs  sync.Map // resource URIs registered exactly

	owned ownedTasks // who created which task (tasks.go)

	search *toolsearch.Index // nil: no search_tools (search.go)
}

// route is where an exposed name leads; for a tool whose input schema
// binds parameters to Mcp-Param-* headers (x-mcp-header), bound is the
// downstream's definition (headers.go).
type route struct {
	server, name string
	bound        *mcp.Tool
}

// catchAll is the resource template every read goes through.
const catchAll = "{+uri}"

var catchAllTemplate = mcp.NewResourceTemplate(catchAll, "proxy")

// New returns the proxy of an agent; its server is built with
// ServerOptions, then handed to Register.
func New(d Deps) (*Proxy, error) {
	f, err := policy.NewToolFilter(d.Tools.Allow, d.Tools.Deny)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	f.Name = "agents." + d.Agent + ".tools"
	p := &Proxy{d: d, filter: f, prefix: len(d.Servers) > 1}
	if d.ToolSearch {
		p.search = toolsearch.New()
		if d.SearchEmbedder != nil {
			p.search.UseEmbeddings(d.SearchEmbedder, d.SearchVectors)
		}
	}
	return p, nil
}

// ServerOptions are the mcp-go options of a proxy agent's server: the list
// hooks, added to h, and the capabilities a downstream may have. Completion
// providers are mcp-go's defaults (empty completions).
func (p *Proxy) ServerOptions(h *server.Hooks) []server.ServerOption {
	h.AddAfterListTools(func(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		res.Tools = p.toolView(ctx, req.Header)
		res.NextCursor = ""
	})
	h.AddAfterDiscover(func(ctx context.Context, _ any, req *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		p.mergeCapabilities(ctx, req.Header, &res.Capabilities)    // discover.go
		p.advertiseTasks(ctx, req.Header, &res.Capabilities, true) // tasks.go
	})
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		p.advertiseTasks(ctx, req.Header, &res.Capabilities, false) // tasks.go
	})
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		p.ensureTool(ctx, req.Params.Name, req.Header)
	})
	opts := []server.ServerOption{server.WithLogging(), server.WithCompletions(),
		server.WithCacheHints(listTTL, cacheScope), // bridged.go
		server.WithMethodCacheHints(mcp.MethodResourcesRead, readTTL, cacheScope)}
	h.AddAfterListPrompts(func(ctx context.Context, _ any, req *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		res.Prompts = p.promptView(ctx, req.Header)
		res.NextCursor = ""
	})
	h.AddBeforeGetPrompt(func(ctx context.Context, _ any, req *mcp.GetPromptRequest) {
		p.ensurePrompt(ctx, req.Params.Name, req.Header)
	})
	h.AddAfterListResources(func(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		res.Resources = p.resourceView(ctx, req.Header)
		res.NextCursor = ""
	})
	h.AddAfterListResourceTemplates(func(ctx context.Context, _ any, req *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		res.ResourceTemplates = p.templateView(ctx, req.Header)
		res.NextCursor = ""
	})
	h.AddBeforeReadResource(func(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
		p.ensureURI(ctx, req.Params.URI, req.Header)
	})
	return append(opts, server.WithPromptCapabilities(false), server.WithResourceCapabilities(true, false))
}

// Register takes the agent's server, built with ServerOptions, and installs
// the catch-all resource template. Tools and prompts are registered as they
// are listed.
func (p *Proxy) Register(srv *server.MCPServer) {
	p.srv = srv
	p.registered.Store(healthToolName, true) // agents registers it, with CallTool
	p.registerSearch(srv)                    // search.go
	p.srv.AddResourceTemplate(catchAllTemplate, p.readResource)
}

func (p *Proxy) exposed(server, name string) string {
	if p.prefix {
		return server + "__" + name
	}
	return name
}

// servers lists the agent's servers caller may use.
func (p *Proxy) servers(caller string) []string {
	out := make([]string, 0, len(p.d.Servers))
	for _, srv := range p.d.Servers {
		if p.d.Callers.AllowServer(caller, srv).Allowed {
			out = append(out, srv)
		}
	}
	return out
}

// listFailed logs a downstream list that failed: its items are left out of
// the caller's view (as the llm kind leaves them out of the model's tools).
func (p *Proxy) listFailed(ctx context.Context, what, srv string, err error) {
	p.d.Logger.Warn("downstream list failed; its items are left out", zap.String("request_id", p.d.RequestID(ctx)),
		zap.String("server", srv), zap.String("op", what), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
}

// decide applies the agent's tools filter, then the caller rule, to one
// downstream tool.
func (p *Proxy) decide(caller, srv, tool string) policy.Decision {
	return p.d.Callers.DecideTool(p.filter, caller, srv, tool)
}

// toolView lists the tools the caller may see under their exposed names,
// then the agent's get_health unless a downstream tool took that name. It
// records the route of every downstream tool, visible or not, so that a call
// of a hidden one reaches the handler and is refused there.
func (p *Proxy) toolView(ctx context.Context, inbound http.Header) []mcp.Tool {
	out, _ := p.toolViewFailed(ctx, inbound)
	return out
}

// toolViewFailed is toolView, and the servers whose tools could not be
// listed, with why.
func (p *Proxy) toolViewFailed(ctx context.Context, inbound http.Header) ([]mcp.Tool, map[string]error) {
	caller := policy.CallerFrom(ctx)
	out := []mcp.Tool{}
	var names []string
	var failed map[string]error
	for _, srv := range p.servers(caller) {
		hdr, err := p.d.Outbound(ctx, srv, inbound, nil)
		var list []mcp.Tool
		if err == nil {
			list, err = p.d.Downstream.Tools(ctx, srv, hdr)
		}
		if err != nil {
			p.listFailed(ctx, "tools/list", srv, err)
			if failed == nil {
				failed = map[string]error{}
			}
			failed[srv] = err
			continue
		}
		for _, t := range list {
			name := p.exposed(srv, t.Name)
			if p.search != nil && name == toolsearch.ToolName {
				continue // shadowed by the agent's own (search.go)
			}
			r := route{srv, t.Name, headerBound(t)}
			if old, ok := p.tools.Load(name); !ok || old.(route).bound != nil || r.bound != nil {
				p.tools.Store(name, r)
			}
			names = append(names, name)
			if p.decide(caller, srv, t.Name).Allowed {
				t.Name = name // t is a copy; its schemas are shared and left alone
				out = append(out, t)
			}
		}
	}
	p.registerTools(names)
	if _, shadowed := p.tools.Load(healthToolName); !shadowed {
		if st := p.srv.GetTool(healthToolName); st != nil {
			out = append(out, st.Tool)
		}
	}
	if p.search != nil {
		out = append(out, searchTool)
	}
	return out, failed
}

const healthToolName = "get_health"

// placeholderSchema is the input schema of registry entries (lists never
// show them). mcp-go reads the called tool's schema on every sessionless
// tools/call (x-mcp-header bindings): a raw, minimal one costs a third of
// NewTool's struct schema.
var placeholderSchema = json.RawMessage(`{"type":"object"}`)

// registerTools adds the names missing from the mcp-go registry, each with
// the forwarding handler and a placeholder definition (lists never show
// registry entries; the downstream validates arguments).
func (p *Proxy) registerTools(names []string) {
	var missing []server.ServerTool
	for _, n := range names {
		if _, ok := p.registered.Load(n); !ok {
			missing = append(missing, server.ServerTool{Tool: mcp.NewToolWithRawSchema(n, "", placeholderSchema), Handler: endpoint.ToolHandler(p.CallTool)})
		}
	}
	if len(missing) == 0 {
		return
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	fresh := missing[:0]
	for _, st := range missing {
		if _, ok := p.registered.Load(st.Tool.Name); !ok {
			fresh = append(fresh, st)
		}
	}
	if len(fresh) == 0 {
		return
	}
	// Mark the names registered only once mcp-go has them: ensureTool reads
	// registered without the lock, and a name marked before AddTools
	// returned was "tool not found" for a concurrent first call.
	p.srv.AddTools(fresh...)
	for _, st := range fresh {
		p.registered.Store(st.Tool.Name, true)
	}
}

// Route reports why a tools/call of name cannot be dispatched for this
// caller (nil: it can): a name whose server could not list its tools is
// that server being unavailable, with the cause, not a missing tool.
func (p *Proxy) Route(ctx context.Context, name string, inbound http.Header) error {
	if _, ok := p.registered.Load(name); ok {
		return nil
	}
	_, failed := p.toolViewFailed(ctx, inbound)
	if _, ok := p.registered.Load(name); ok {
		return nil
	}
	for _, srv := range p.d.Servers {
		if err := failed[srv]; err != nil && (!p.prefix || strings.HasPrefix(name, srv+"__")) {
			return &UnavailableError{Tool: name, Server: srv, RequestID: p.d.RequestID(ctx), Err: err, self: p.d.Self} // unavailable.go
		}
	}
	if err := p.held(name); err != nil {
		return &HeldError{Agent: p.d.Agent, RequestID: p.d.RequestID(ctx), Err: err, self: p.d.Self} // held.go
	}
	return fmt.Errorf("tool %q not found", name)
}

// ensureTool makes a name callable before mcp-go looks it up: a name not
// registered yet is registered when this caller's listing shows it.
func (p *Proxy) ensureTool(ctx context.Context, name string, inbound http.Header) {
	if _, ok := p.registered.Load(name); ok {
		return
	}
	p.toolView(ctx, inbound)
}

// CallTool forwards one tools/call c and returns the downstream result
// unchanged (mcp-go's handler of every exposed tool, through
// endpoint.ToolHandler).
func (p *Proxy) CallTool(ctx context.Context, c *wire.Call, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, _, err := p.forward(ctx, req, false, c)
	return res, err
}

// forward runs one tools/call. A tool the policy denies is refused with an
// isError result; a downstream that answers with a JSON-RPC error is
// answered with one; a downstream that cannot be reached gives an isError
// result naming the failure and the request id. With raw set (the fast
// path) a downstream result comes back as the downstream sent it (rr), any
// other answer as res; call, the caller's fast-path call (nil: none), may
// let a large result come back streamed (wire.Call.Streams), which the
// caller copies out and closes; it is accounted for then.
func (p *Proxy) forward(ctx context.Context, req mcp.CallToolRequest, raw bool, call *wire.Call) (res *mcp.CallToolResult, rr *mcpclient.RawResult, err error) {
	start := time.Now()
	name := req.Params.Name
	v, ok := p.tools.Load(name)
	if !ok {
		if name == healthToolName {
			res, err = p.d.Health(ctx, req)
			return res, nil, err
		}
		return nil, nil, fmt.Errorf("tool %q not found", name)
	}
	r := v.(route)
	rid, caller := p.d.RequestID(ctx), policy.CallerFrom(ctx)
	d := p.decide(caller, r.server, r.name)
	audit := policy.AuditEvent{RequestID: rid, Caller: caller, Agent: p.d.Agent, Server: r.server, Tool: r.name, Decision: d}
	if !d.Allowed {
		audit.Latency = time.Since(start)
		p.d.Auditor.Record(ctx, audit)
		p.d.Observe(caller, name, "denied", start)
		return mcp.NewToolResultError(fmt.Sprintf("tool %s is denied by policy (%s)", name, d.Reason)), nil, nil
	}
	relay, rel := p.relayFor(ctx, req, call)
	defer relay.End() // also on a panic: no request may be written after the call
	outbound, err := p.d.Outbound(ctx, r.server, req.Header, rel)
	isError := false
	switch {
	case err != nil:
	case raw:
		// A large result may come back streamed from the downstream's
		// body (wire, body.go), for the caller's response to copy.
		rr, err = p.d.Downstream.CallToolRaw(ctx, r.server, r.name, rawArguments(req), outbound, relay.ProgressFunc(),
			mcpclient.CallOptions{Stream: call.Streams(), Extras: mcpclient.ExtrasOf(call), Relay: rel})
		isError = err == nil && rr != nil && rr.IsError
	default:
		res, err = p.d.Downstream.CallTool(ctx, r.server, r.name, req.GetArguments(), outbound, relay.ProgressFunc(), mcpclient.CallOptions{Relay: rel})
		isError = err == nil && res != nil && res.IsError
	}
	relay.Flush(2 * time.Second)
	if err != nil {
		p.d.Rejected(ctx, r.server, err)
	}
	if err == nil && rr.Streamed() {
		p.accountCopied(ctx, audit, name, start, rr)
		return nil, rr, nil
	}
	p.account(ctx, audit, name, start, res, rr, err, isError)
	switch {
	case err == nil:
		return res, rr, nil
	case isRPCError(err):
		return nil, nil, err
	case errors.Is(err, sessions.ErrStoreUnavailable):
		// The caller's downstream session is another replica's and the
		// store that names it cannot be read: refused, to be retried.
		return nil, nil, &wire.CallerError{Code: mcp.INTERNAL_ERROR, Status: http.StatusServiceUnavailable, RetryAfter: sessions.StoreRetryAfter,
			Message: fmt.Sprintf("%v; retry in %s (request id %s)", sessions.ErrStoreUnavailable, sessions.StoreRetryAfter, rid)}
	}
	p.d.Logger.Warn("downstream tool failed", zap.String("request_id", rid), zap.String("server", r.server),
		zap.String("tool", r.name), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err), tracing.LogField(ctx))
	return mcp.NewToolResultError(fmt.Sprintf("%s: %v (request id %s)", p.d.Agent, err, rid)), nil, nil
}

// accountCopied accounts a streamed result once the caller's response has
// copied it (or given it up): its size, isError and the copy's error are
// known then. (Apart from forward, whose values would otherwise all live on
// the heap for the closure.)
func (p *Proxy) accountCopied(ctx context.Context, audit policy.AuditEvent, name string, start time.Time, rr *mcpclient.RawResult) {
	rr.OnClose(func(err error) {
		if err != nil {
			p.d.Logger.Warn("downstream tool failed", zap.String("request_id", audit.RequestID), zap.String("server", audit.Server),
				zap.String("tool", audit.Tool), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err), tracing.LogField(ctx))
		}
		p.account(ctx, audit, name, start, nil, rr, err, err == nil && rr.IsError)
	})
}

// account records one forwarded call in the metrics and the audit log.
func (p *Proxy) account(ctx context.Context, audit policy.AuditEvent, name string, start time.Time, res *mcp.CallToolResult, rr *mcpclient.RawResult, err error, isError bool) {
	outcome := p.d.Outcome(ctx, err)
	if isError {
		outcome = "error"
	}
	p.d.Observe(audit.Caller, name, outcome, start)
	audit.Outcome, audit.ResultBytes, audit.Latency = policy.AuditOutcome(outcome), resultBytes(res, rr), time.Since(start)
	if reason := pins.RefusalReason(err); reason != "" {
		// The pins refused it at call time (a change seen since the tool
		// was listed): a refusal, not a failed call.
		audit.Decision, audit.Outcome = policy.Decision{Reason: reason}, policy.OutcomeDeny
	}
	p.d.Auditor.Record(ctx, audit)
}

// resultBytes is the size of a call's result as its caller gets it: the
// downstream's bytes on the raw path, the encoded result otherwise (0 when
// there is none).
func resultBytes(res *mcp.CallToolResult, rr *mcpclient.RawResult) int {
	switch {
	case rr != nil:
		return rr.Len()
	case res != nil:
		b, _ := json.Marshal(res)
		return len(b)
	}
	return 0
}

// isRPCError reports whether err is the downstream's JSON-RPC error answer
// (as mcp-go's client maps it), as opposed to a failure to get one.
func isRPCError(err error) bool {
	for _, target := range []error{mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound, mcp.ErrInvalidParams,
		mcp.ErrInternalError, mcp.ErrRequestInterrupted, mcp.ErrResourceNotFound} {
		if errors.Is(err, target) {
			return true
		}
	}
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		return true
	}
	// A downstream that needs a client capability its caller did not
	// declare (MCP 2026-07-28): the caller gets the error as it is.
	var rpc *mcpclient.RPCError
	return errors.As(err, &rpc) && rpc.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY
}

func progressToken(m *mcp.Meta) mcp.ProgressToken {
	if m == nil {
		return nil
	}
	return m.ProgressToken
}

// outbound composes srv's headers for a listing or a read; a failure (a
// token exchange) leaves the caller's request without anything from srv,
// as an unreachable server does, and is logged. relay is the call's (nil:
// none; Deps.Outbound).
func (p *Proxy) outbound(ctx context.Context, srv string, inbound http.Header, relay *mcpclient.Relay) http.Header {
	hdr, err := p.d.Outbound(ctx, srv, inbound, relay)
	if err != nil {
		p.d.Logger.Warn("composing the downstream's credentials failed", zap.String("request_id", p.d.RequestID(ctx)),
			zap.String("server", srv), zap.Error(err))
		return nil
	}
	return hdr
}
