package agents

// The proxy kind (SPEC §6): no LLM. It re-exposes the tools, prompts,
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
//     call time and turns a hidden tool into "tool not found"; SPEC §7 wants a
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
//     through mcp-go's server at all (proxy_fast.go).
//
// The handlers decide: the agent's tools.allow/deny (globs on
// "<server>__<tool>", also for a single server whose names carry no prefix)
// and the caller rule. A denied tool is hidden from tools/list and refused
// at call time with an isError result; every call is audited.
//
// Log levels, log messages, elicitation, sampling and roots requests are
// relayed as proxy_caller.go describes. Not relayed, answered as an mcp-go stateless server does:
// resources/(un)subscribe are acknowledged but not forwarded
// (notifications/resources/updated cannot reach a caller of a stateless
// endpoint); completion/complete answers an empty completion.
//
// An answer is plain JSON unless something streams before it (progress,
// logging, a server-to-client request), as mcp-go and the downstreams
// answer: a client parses a JSON answer for about half the CPU of the same
// answer framed as an SSE event.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/policy"
)

// CatalogDownstream is what the proxy needs beyond Downstream to re-expose
// prompts and resources (*mcpclient.Manager implements it). With a
// Downstream that lacks it, the proxy offers tools only.
type CatalogDownstream interface {
	ListPrompts(ctx context.Context, server string, hdr http.Header) (*mcp.ListPromptsResult, error)
	GetPrompt(ctx context.Context, server, name string, args map[string]string, hdr http.Header) (*mcp.GetPromptResult, error)
	ListResources(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourcesResult, error)
	ListResourceTemplates(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourceTemplatesResult, error)
	ReadResource(ctx context.Context, server, uri string, hdr http.Header) (*mcp.ReadResourceResult, error)
}

// proxy is the state of one proxy agent. Its maps only grow by names the
// downstream servers list.
type proxy struct {
	a       *Agent
	filter  policy.ToolFilter
	catalog CatalogDownstream // nil: tools only
	prefix  bool              // more than one server: names are "<server>__<name>"

	infoOnce sync.Once       // guards info
	info     json.RawMessage // the agent's identity for 2026-07-28 results (fast_raw.go)

	tools   sync.Map // exposed tool name → route
	prompts sync.Map // exposed prompt name → route

	regMu      sync.Mutex
	registered sync.Map // exposed tool names in the mcp-go registry
	promptsReg sync.Map // exposed prompt names in the mcp-go registry
	exactURIs  sync.Map // resource URIs registered exactly
}

// route is where an exposed name leads.
type route struct{ server, name string }

// catchAll is the resource template every read goes through.
const catchAll = "{+uri}"

var catchAllTemplate = mcp.NewResourceTemplate(catchAll, "proxy")

func newProxy(a *Agent) (*proxy, error) {
	f, err := policy.NewToolFilter(a.Config.Tools.Allow, a.Config.Tools.Deny)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	p := &proxy{a: a, filter: f, prefix: len(a.Config.Servers) > 1}
	p.catalog, _ = a.set.deps.Downstream.(CatalogDownstream)
	return p, nil
}

// serverOptions are the mcp-go options of a proxy agent's server: the list
// hooks, and the capabilities a downstream may have. Completion providers
// are mcp-go's defaults (empty completions).
func (p *proxy) serverOptions() []server.ServerOption {
	h := &server.Hooks{}
	h.AddAfterListTools(func(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		res.Tools = p.toolView(ctx, req.Header)
		res.NextCursor = ""
	})
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		p.ensureTool(ctx, req.Params.Name, req.Header)
	})
	opts := []server.ServerOption{server.WithHooks(h), server.WithLogging(), server.WithCompletions()}
	if p.catalog == nil {
		return opts
	}
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

// register installs the catch-all resource template. Tools and prompts are
// registered as they are listed.
func (p *proxy) register() {
	p.registered.Store(healthToolName, true) // agent.go registers it, with callTool
	if p.catalog != nil {
		p.a.mcp.AddResourceTemplate(catchAllTemplate, p.readResource)
	}
}

func (p *proxy) exposed(server, name string) string {
	if p.prefix {
		return server + "__" + name
	}
	return name
}

// servers lists the agent's servers caller may use.
func (p *proxy) servers(caller string) []string {
	out := make([]string, 0, len(p.a.Config.Servers))
	for _, srv := range p.a.Config.Servers {
		if p.a.set.deps.Callers.AllowServer(caller, srv).Allowed {
			out = append(out, srv)
		}
	}
	return out
}

// listFailed logs a downstream list that failed: its items are left out of
// the caller's view (as the llm kind leaves them out of the model's tools).
func (p *proxy) listFailed(ctx context.Context, what, srv string, err error) {
	p.a.log.Warn("downstream list failed; its items are left out", zap.String("request_id", RequestID(ctx)),
		zap.String("server", srv), zap.String("op", what), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
}

// decide applies the agent's tools filter, then the caller rule, to one
// downstream tool.
func (p *proxy) decide(caller, srv, tool string) policy.Decision {
	return p.a.set.deps.Callers.DecideTool(p.filter, caller, srv, tool)
}

// toolView lists the tools the caller may see under their exposed names,
// then the agent's get_health unless a downstream tool took that name. It
// records the route of every downstream tool, visible or not, so that a call
// of a hidden one reaches the handler and is refused there.
func (p *proxy) toolView(ctx context.Context, inbound http.Header) []mcp.Tool {
	caller := callerOf(ctx)
	out := []mcp.Tool{}
	var names []string
	for _, srv := range p.servers(caller) {
		list, err := p.a.set.deps.Downstream.Tools(ctx, srv, p.a.set.outbound(srv, inbound))
		if err != nil {
			p.listFailed(ctx, "tools/list", srv, err)
			continue
		}
		for _, t := range list {
			name := p.exposed(srv, t.Name)
			if _, ok := p.tools.Load(name); !ok {
				p.tools.Store(name, route{srv, t.Name})
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
		if st := p.a.mcp.GetTool(healthToolName); st != nil {
			out = append(out, st.Tool)
		}
	}
	return out
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
func (p *proxy) registerTools(names []string) {
	var missing []server.ServerTool
	for _, n := range names {
		if _, ok := p.registered.Load(n); !ok {
			missing = append(missing, server.ServerTool{Tool: mcp.NewToolWithRawSchema(n, "", placeholderSchema), Handler: p.callTool})
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
	p.a.mcp.AddTools(fresh...)
	for _, st := range fresh {
		p.registered.Store(st.Tool.Name, true)
	}
}

// ensureTool makes a name callable before mcp-go looks it up: a name not
// registered yet is registered when this caller's listing shows it.
func (p *proxy) ensureTool(ctx context.Context, name string, inbound http.Header) {
	if _, ok := p.registered.Load(name); ok {
		return
	}
	p.toolView(ctx, inbound)
}

// callTool forwards one tools/call and returns the downstream result
// unchanged (mcp-go's handler of every exposed tool).
func (p *proxy) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, _, err := p.forward(ctx, req, nil)
	return res, err
}

// forward runs one tools/call. A tool the policy denies is refused with an
// isError result; a downstream that answers with a JSON-RPC error is
// answered with one; a downstream that cannot be reached gives an isError
// result naming the failure and the request id. With raw set (the fast
// path) a downstream result comes back as the downstream sent it (rr), any
// other answer as res.
func (p *proxy) forward(ctx context.Context, req mcp.CallToolRequest, raw RawDownstream) (res *mcp.CallToolResult, rr *mcpclient.RawResult, err error) {
	start := time.Now()
	name := req.Params.Name
	v, ok := p.tools.Load(name)
	if !ok {
		if name == healthToolName {
			res, err = p.a.handleHealth(ctx, req)
			return res, nil, err
		}
		return nil, nil, fmt.Errorf("tool %q not found", name)
	}
	r := v.(route)
	rid, caller := RequestID(ctx), callerOf(ctx)
	d := p.decide(caller, r.server, r.name)
	p.a.set.deps.Auditor.Record(ctx, policy.AuditEvent{RequestID: rid, Caller: caller, Agent: p.a.Name,
		Server: r.server, Tool: r.name, Decision: d, Latency: time.Since(start)})
	if !d.Allowed {
		p.a.observe(name, "denied", start)
		return mcp.NewToolResultError(fmt.Sprintf("tool %s is denied by policy (%s)", name, d.Reason)), nil, nil
	}
	relay, rel := p.relayFor(ctx, req)
	defer relay.end() // also on a panic: no request may be written after the call
	ctx = mcpclient.WithRelay(ctx, rel)
	outbound := p.a.set.outbound(r.server, req.Header)
	isError := false
	if raw != nil {
		rr, err = raw.CallToolRaw(ctx, r.server, r.name, rawArguments(req), outbound, relay.progressFunc())
		isError = err == nil && rr != nil && rr.IsError
	} else {
		res, err = p.a.set.deps.Downstream.CallTool(ctx, r.server, r.name, req.GetArguments(), outbound, relay.progressFunc())
		isError = err == nil && res != nil && res.IsError
	}
	relay.flush(2 * time.Second)
	outcome := outcomeOf(ctx, err)
	if isError {
		outcome = "error"
	}
	p.a.observe(name, outcome, start)
	switch {
	case err == nil:
		return res, rr, nil
	case isRPCError(err):
		return nil, nil, err
	}
	p.a.log.Warn("downstream tool failed", zap.String("request_id", rid), zap.String("server", r.server),
		zap.String("tool", r.name), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
	return mcp.NewToolResultError(fmt.Sprintf("%s: %v (request id %s)", p.a.Name, err, rid)), nil, nil
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
	return errors.As(err, &required)
}

func progressToken(m *mcp.Meta) mcp.ProgressToken {
	if m == nil {
		return nil
	}
	return m.ProgressToken
}
