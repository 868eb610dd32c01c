package endpoint

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// listenAckWait bounds how long a subscriptions/listen result waits for its
// acknowledgement to be written (it is queued before the result is made, so
// this is reached only when the response cannot stream).
const listenAckWait = time.Second

// AwaitListenAck adds to h the hook that makes a subscriptions/listen
// answer carry its notifications/subscriptions/acknowledged before its
// result.
//
// mcp-go (v1.2.1, streamable_http.go) queues the acknowledgement on the
// request's session and a forwarder goroutine writes it; when nothing could
// be subscribed (none of our agents declares listChanged), the handler
// returns the result at once. If the response is written before the
// forwarder takes the write lock, the forwarder finds the request done and
// drops the acknowledgement it has already taken off the queue: the caller
// sees a result and no acknowledgement (the conformance suite's
// sep-2575-server-sends-subscription-ack, about one run in eight on two
// cores). The hook runs after the handler and before mcp-go writes the
// result, so waiting there for the first event on the tracked response
// (TrackStream) lets the forwarder write the acknowledgement first.
func AwaitListenAck(h *server.Hooks) {
	h.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		if t := scopeOf(ctx).tracker; t != nil {
			t.WaitEvents(ctx, 1, listenAckWait)
		}
	})
}
