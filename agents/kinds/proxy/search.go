package proxy

// search_tools on a proxy with tool_search: true. The proxy still lists
// every tool; search_tools ranks the caller's tools/list (toolViewFailed,
// so whatever hides a tool from the list hides it from the search) with
// the agent's one index (package toolsearch). A downstream tool named
// search_tools on a single-server proxy is shadowed by it.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/policy"
)

// searchTool is search_tools's definition, as lists show it.
var searchTool = func() mcp.Tool {
	t := mcp.NewToolWithRawSchema(toolsearch.ToolName, toolsearch.ToolDescription, []byte(toolsearch.ToolSchema))
	t.Annotations.ReadOnlyHint, t.Annotations.IdempotentHint = mcp.ToBoolPtr(true), mcp.ToBoolPtr(true)
	return t
}()

// registerSearch adds search_tools to srv when the agent offers it.
func (p *Proxy) registerSearch(srv *server.MCPServer) {
	if p.search == nil {
		return
	}
	srv.AddTool(searchTool, p.searchTools)
	p.registered.Store(toolsearch.ToolName, true)
}

// searchTools answers search_tools for the caller of ctx.
func (p *Proxy) searchTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start, caller, rid := time.Now(), policy.CallerFrom(ctx), p.d.RequestID(ctx)
	audit := policy.AuditEvent{RequestID: rid, Caller: caller, Agent: p.d.Agent, Tool: toolsearch.ToolName,
		Decision: policy.Decision{Allowed: true, Reason: policy.ReasonAllowed}}
	defer func() {
		audit.Latency = time.Since(start)
		p.d.Auditor.Record(ctx, audit)
	}()
	q, err := toolsearch.ParseArgs(req.GetArguments(), func(s string) bool { return slices.Contains(p.d.Servers, s) })
	if err != nil {
		audit.Outcome = policy.OutcomeError
		p.d.Observe(caller, toolsearch.ToolName, "error", start)
		return mcp.NewToolResultError(fmt.Sprintf("search_tools: invalid arguments: %v (request id %s)", err, rid)), nil
	}
	view, failed := p.toolViewFailed(ctx, req.Header)
	entries := make([]toolsearch.Entry, 0, len(view))
	for _, t := range view {
		v, ok := p.tools.Load(t.Name)
		if !ok { // get_health, search_tools
			continue
		}
		r := v.(route)
		name := t.Name
		t.Name = r.name // ranked by the server's own name; a copy, its schemas shared
		entries = append(entries, toolsearch.Entry{Server: r.server, Name: name, Tool: t})
	}
	res := p.search.Search(ctx, entries, q)
	for _, srv := range p.d.Servers {
		if err := failed[srv]; err != nil && (q.Servers == nil || slices.Contains(q.Servers, srv)) {
			res.Unavailable = append(res.Unavailable, fmt.Sprintf("%s: %v", srv, err))
		}
	}
	audit.Outcome, audit.ResultBytes = policy.OutcomeAllow, len(res.JSON())
	p.d.Observe(caller, toolsearch.ToolName, "ok", start)
	return mcp.NewToolResultStructured(res, res.JSON()), nil
}
