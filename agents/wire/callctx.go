package wire

import (
	"context"

	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
)

// What a call's context carries for this package: one typed value under
// one key, copied as it is narrowed (withCall), never written after.
type callContext struct {
	stream *Stream // the fast call's response (Serve), or nil
}

func callOf(ctx context.Context) callContext { return ctxvalue.Of[callContext](ctx) }

// withCall is ctx whose call context is ctx's changed by edit.
func withCall(ctx context.Context, edit func(*callContext)) context.Context {
	return ctxvalue.With(ctx, edit)
}
