package toolbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
)

// searchTools answers search_tools: the tools of the servers the caller may
// use, each server's list as get_server_tools shows it (visibleTools), ranked
// by the agent's one index. A server whose tools cannot be listed is left
// out and named in unavailable.
func (tb *toolbox) searchTools(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	q, err := toolsearch.ParseArgs(req.GetArguments(), func(s string) bool { return slices.Contains(tb.d.Servers, s) })
	if err != nil {
		return nil, tbErr(CodeInvalidArgument, "%v", err)
	}
	var entries []toolsearch.Entry
	var unavailable []string
	for _, srv := range tb.d.Servers {
		if q.Servers != nil && !slices.Contains(q.Servers, srv) || !tb.d.Callers.AllowServer(c.caller, srv).Allowed {
			continue
		}
		tools, err := tb.visibleTools(ctx, c.caller, srv, req.Header)
		if err != nil {
			tb.d.Logger.Warn("search_tools: a server's tools could not be listed", zap.String("request_id", tb.d.RequestID(ctx)),
				zap.String("server", srv), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
			unavailable = append(unavailable, fmt.Sprintf("%s: %v", srv, err))
			continue
		}
		for _, t := range tools {
			entries = append(entries, toolsearch.Entry{Server: srv, Name: t.Name, Tool: t})
		}
	}
	res := tb.index.Search(ctx, entries, q)
	res.Unavailable = unavailable
	return mcp.NewToolResultStructured(res, res.JSON()), nil
}
