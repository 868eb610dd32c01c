package mcpclient

// The bound on one downstream message (Options.MaxMessageBytes) on every
// path that reads a downstream: the raw calls read within it (wire's
// ClientCall); mcp-go's client (v1.2.1) reads a JSON answer whole and an
// SSE line whole, and a stdio line whole, with no bound at all, so its
// HTTP bodies (Streamable HTTP and the legacy SSE transport) are bounded
// under it, in the session's RoundTripper (wire.BoundBody), and a stdio
// server's stdout before mcp-go reads it (lineBound, stdio.go). A message
// past the bound ends the read with a *tooLargeError, noted where the call
// can find it (mcp-go does not always pass the read's error on: an SSE
// answer cut short is "unexpected nil response"): in the call's context
// for the answer to its own request, on the session for a long-lived
// stream (the legacy SSE transport's answers, the GET stream, a stdio
// server's stdout), which the error ends. The call then fails saying so
// (settle), after at most the bound was read of the message.

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// tooLargeError is wire's: a downstream message passed the bound.
type tooLargeError = wire.TooLargeError

// errTooLarge is what every *tooLargeError is (errors.Is).
var errTooLarge = wire.ErrTooLarge

// errNoResult is a response with neither a result nor an error.
var errNoResult = wire.ErrNoResult

// settle turns the error of a call on s through cli into the
// *tooLargeError its read noted, if any: an answer of the call's own past
// the bound (the session stays), or a message on the session's stream
// (which the bound ended: the session is dropped, to be connected again
// by the next call). ok is false when nothing was noted.
func (s *session) settle(ctx context.Context, cli *client.Client, err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	if n := callOf(ctx).tooLarge; n != nil {
		if e := n.Load(); e != nil {
			return answeredError{Err: e}, true
		}
	}
	if e := s.streamTooLarge.Swap(nil); e != nil {
		s.drop(ctx, cli)
		return answeredError{Err: fmt.Errorf("%w; the stream that carried it was closed", e)}, true
	}
	return err, false
}
