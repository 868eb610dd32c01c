package proxy

// server/discover (MCP 2026-07-28) of a proxy agent: the merged view of
// its downstreams. mcp-go answers with the capabilities the agent's server
// was built with (ServerOptions: tools, logging, completions, and prompts
// and resources whenever the Downstream can re-expose them); the proxy
// keeps prompts and resources only when a server the caller may use
// declares them, as the caller's lists would show nothing of them
// otherwise. Tools stay (get_health is the agent's own), and so do logging
// and completions, which the proxy answers itself.

import (
	"context"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/policy"
)

// mergeCapabilities narrows caps, the agent's own, to what the servers the
// caller of ctx may use declare. A server that cannot be reached declares
// nothing (its items are left out of the lists too).
func (p *Proxy) mergeCapabilities(ctx context.Context, inbound http.Header, caps *mcp.ServerCapabilities) {
	var prompts, resources bool
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		c, err := p.d.Downstream.Capabilities(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			p.listFailed(ctx, "server/discover", srv, err)
			continue
		}
		prompts = prompts || c.Prompts != nil
		resources = resources || c.Resources != nil
	}
	if !prompts {
		caps.Prompts = nil
	}
	if !resources {
		caps.Resources = nil
	}
}
