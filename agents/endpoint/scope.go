package endpoint

// What the endpoint knows of the request a context belongs to, for the
// agent's handlers, the kinds and the endpoint's own later steps: one typed
// value under one context key, not a key per fact (as CoreDNS's
// request.Request is what every plugin reads of a message; each package of
// agents keeps one such value of its own, as agents/wire and
// agents/mcpclient do for a call). It is built as the request goes in
// (TrackStream, then ServeHTTP) before any handler runs, and never written
// after. A bridged call's round-trip state is not here: it travels in the
// call value (wire.Call.Rounds).

import (
	"context"

	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
)

// Scope is what the endpoint knows of one agent request (ScopeFrom).
type Scope struct {
	// Tracker is the request's tracked response (TrackStream), or nil.
	Tracker *StreamTracker
	state   *requestState // ServeHTTP's, for a POST it decoded; or nil
}

// ScopeFrom is the scope of the request of ctx: the zero Scope for a
// context no endpoint request carries.
func ScopeFrom(ctx context.Context) Scope { return ctxvalue.Of[Scope](ctx) }

// withScope is ctx whose scope is ctx's changed by edit; ctx's own is left
// as it is.
func withScope(ctx context.Context, edit func(*Scope)) context.Context {
	return ctxvalue.With(ctx, edit)
}
