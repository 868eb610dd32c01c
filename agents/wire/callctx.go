package wire

import "context"

// What a call's context carries for this package: one typed value under
// one key, copied as it is narrowed (withCall), never written after.
type callContext struct {
	stream    *Stream      // the fast call's response (Serve), or nil
	roundTrip *RoundTrip   // a 2026-07-28 call's multi round-trip members, or nil
	pass      *PassThrough // a large result may be passed through (WithPassThrough), or nil
	gate      func() bool  // WithPassThroughGate's, or nil
}

type callKey struct{}

func callOf(ctx context.Context) callContext {
	if c, _ := ctx.Value(callKey{}).(*callContext); c != nil {
		return *c
	}
	return callContext{}
}

// withCall is ctx whose call context is ctx's changed by edit.
func withCall(ctx context.Context, edit func(*callContext)) context.Context {
	c := callOf(ctx)
	edit(&c)
	return context.WithValue(ctx, callKey{}, &c)
}
