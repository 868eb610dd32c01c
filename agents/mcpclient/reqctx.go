package mcpclient

import (
	"context"
	"sync/atomic"

	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
)

// What a downstream request's context carries for this package: one typed
// value under one key (as the endpoint's Scope), copied and narrowed as a
// call goes down (withCall), never written after it is made.
type callContext struct {
	relay *Relay // the call's Relay (CallOptions.Relay), or nil
	// op is the request being made through do (a tools/call, a
	// tools/list...): a server-to-client request then came on that
	// request's own stream (serverRequest). "" outside one.
	op string
	// tooLarge is where the call's reads note a message past the bound
	// (bound.go); nil outside a call: the session's own note.
	tooLarge *atomic.Pointer[tooLargeError]
	// auth is the Authorization of the call's principal on a CallerAuth
	// server (callerauth.go): its requests carry it, whatever a later call
	// set on the session; "": the session's.
	auth string
}

func callOf(ctx context.Context) callContext { return ctxvalue.Of[callContext](ctx) }

// withCall is ctx whose call context is ctx's changed by edit.
func withCall(ctx context.Context, edit func(*callContext)) context.Context {
	return ctxvalue.With(ctx, edit)
}

// withRelay is ctx whose request takes the downstream's messages to r
// (nil: none): mcp-go hands a server-to-client request to serverRequest
// with the context of the request whose stream carried it, so the call's
// Relay is found there.
func withRelay(ctx context.Context, r *Relay) context.Context {
	return withCall(ctx, func(c *callContext) { c.relay = r })
}

// withOp marks ctx as the context of a request made through do (op), with
// a fresh note for its reads of a message past the bound (bound.go), the
// call's own Authorization auth ("": none; callerauth.go) and its relay
// (as withRelay; keepRelay: ctx's): one context value for all.
func withOp(ctx context.Context, op, auth string, relay *Relay) context.Context {
	return withCall(ctx, func(c *callContext) {
		c.op, c.tooLarge, c.auth = op, new(atomic.Pointer[tooLargeError]), auth
		if relay != keepRelay {
			c.relay = relay
		}
	})
}

// keepRelay is the relay of an op that keeps its context's (do).
var keepRelay = new(Relay)

// withListOp marks ctx as a tools/list made for do's callers (a fetch or a
// refresh of the cache): no caller's Relay or other values are carried.
func withListOp(ctx context.Context, op string) context.Context {
	return ctxvalue.With(ctx, func(c *callContext) { *c = callContext{op: op} })
}

// tooLargeNoteOf is where a read on ctx notes a too large message: the
// call's note, or the session's (stream) for a read outside any call.
func tooLargeNoteOf(ctx context.Context, stream *atomic.Pointer[tooLargeError]) *atomic.Pointer[tooLargeError] {
	if n := callOf(ctx).tooLarge; n != nil {
		return n
	}
	return stream
}
