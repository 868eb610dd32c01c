package agents

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// Directory is the agents endpoint (agents_endpoint: true): one
// MCP server whose tools are the agents with a send_message, each named by
// its agent (sanitised) with send_message's arguments; a call runs that
// agent. Which agents a request may see and call is the gateway's answer,
// handed to Serve.
type Directory struct {
	handler http.Handler
}

func allowedFrom(ctx context.Context) func(string) bool {
	if f := requestOf(ctx).allowed; f != nil {
		return f
	}
	return func(string) bool { return false }
}

// NewDirectory builds the agents endpoint of the set.
func (s *Set) NewDirectory() *Directory {
	byTool := map[string]*Agent{}
	hooks := &server.Hooks{}
	endpoint.AwaitListenAck(hooks)
	srv := server.NewMCPServer(s.deps.Config.Name, s.deps.Config.Version,
		server.WithHooks(hooks),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithDescription("Every agent of "+s.deps.Config.Name+" as one tool each."),
		// The list is filtered per caller: private.
		server.WithCacheHints(listCacheTTL, mcp.CacheScopePrivate),
		// Applied to tools/list and to every tools/call (mcp-go checks the
		// called tool through the same filter).
		server.WithToolFilter(func(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
			allowed := allowedFrom(ctx)
			out := tools[:0:0]
			for _, t := range tools {
				if a := byTool[t.Name]; a != nil && allowed(a.Name) {
					out = append(out, t)
				}
			}
			return out
		}))
	for _, name := range s.Names() {
		a := s.agents[name]
		if a.run == nil {
			continue // proxy and toolbox have no send_message
		}
		tool := config.SanitizeToolName(name)
		if byTool[tool] != nil {
			continue // names that sanitise alike: the first in order
		}
		byTool[tool] = a
		srv.AddTool(mcp.NewToolWithRawSchema(tool, a.ToolDescription(), sendMessageSchemaFor(a.Config.Overrides)), endpoint.ToolHandler(a.handleSendMessage))
	}
	return &Directory{handler: server.NewStreamableHTTPServer(srv,
		server.WithStateLess(true),
		server.WithDisableLocalhostProtection(true), // the gateway guards by Origin
		server.WithStreamableHTTPLogger(mcpclient.SlogLogger(s.deps.Logger.Named("agents-endpoint"))),
	)}
}

// Serve answers one request of a caller that may see and call the agents
// allowed says yes to. mcp-go hands its tool filter the request's context
// only: allowed reaches it there, under this package's own key.
func (d *Directory) Serve(w http.ResponseWriter, r *http.Request, allowed func(agent string) bool) {
	ctx := withRequest(r.Context(), func(q *request) { q.allowed = allowed })
	d.handler.ServeHTTP(w, r.WithContext(ctx))
}
