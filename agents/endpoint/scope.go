package endpoint

// What the endpoint knows of the request a context belongs to, for its own
// later steps: one typed value under one context key, read only in this
// package (scopeOf). It is built as the request goes in (TrackStream, then
// ServeHTTP) before any handler runs, and never written after. What a
// call's kind needs of it travels in the call value: the tracked response
// is wire.Call.Sink, set by the fast path (wire.Serve) and, for a call
// mcp-go serves, by the registered handler (ToolHandler). A bridged call's
// round-trip state travels there too (wire.Call.Rounds).

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// scope is what the endpoint knows of one agent request.
type scope struct {
	tracker *StreamTracker // the request's tracked response (TrackStream), or nil
}

// scopeOf is the scope of the request of ctx: the zero scope for a context
// no endpoint request carries.
func scopeOf(ctx context.Context) scope { return ctxvalue.Of[scope](ctx) }

// withScope is ctx whose scope is ctx's changed by edit; ctx's own is left
// as it is.
func withScope(ctx context.Context, edit func(*scope)) context.Context {
	return ctxvalue.With(ctx, edit)
}

// sink is s's tracked response as a call carries it (wire.Call.Sink): nil
// when none is tracked.
func (s scope) sink() wire.Sink {
	if s.tracker == nil {
		return nil
	}
	return s.tracker
}

// ToolHandler is h as mcp-go's handler of a tool: mcp-go hands its handlers
// only (ctx, request), so the call value h takes is made here, with the
// caller's tracked response this package put in the request (Sink); its
// other members are zero (mcp-go's call: no fast-path stream, no
// round-trip state). The fast path hands h's kind its own call
// (wire.Serve).
func ToolHandler(h func(ctx context.Context, c *wire.Call, req mcp.CallToolRequest) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return h(ctx, &wire.Call{Req: req, Sink: scopeOf(ctx).sink()}, req)
	}
}
