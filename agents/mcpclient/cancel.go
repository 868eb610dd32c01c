package mcpclient

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Cancelling a downstream call. mcp-go's transports send nothing when a
// request's context ends (its client does, over stdio only); over HTTP the
// closed connection is all the server sees, and a server whose
// session-based streams are resumable (the Go SDK's, run stateful) does not
// take it for a cancellation and runs the tool to its end. Every tools/call
// is sent with an id of the call's own (callTyped, callRaw), and a call
// whose context ends before its result sends the cancellation itself, on
// every transport.

// cancelTimeout bounds sending one notifications/cancelled.
const cancelTimeout = 5 * time.Second

// callID is a new id for a tools/call on s, a string that cannot clash with
// mcp-go's numeric ids on the same session; defer cancelIfEnded with it.
func (s *session) callID() string {
	return requestID("call", s.srv.m.callSeq.Add(1))
}

// cancelIfEnded tells the downstream, in the background and best effort,
// that the request callID was cancelled, if ctx (the call's) has ended.
func (s *session) cancelIfEnded(ctx context.Context, cli *client.Client, callID string) {
	if ctx.Err() == nil || callID == "" {
		return
	}
	id := json.RawMessage(strconv.Quote(callID))
	reason := context.Cause(ctx).Error()
	m := s.srv.m
	m.ending.Add(1) // the call is still in flight: Close waits for this too
	m.spawn(func() {
		defer m.ending.Done()
		// Not ended by Close: a call cancelled because the manager closes
		// is told to the downstream before its session ends.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), cancelTimeout)
		defer cancel()
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
		}}
		if err := cli.GetTransport().SendNotification(cctx, n); err != nil {
			s.srv.m.log.Debug("sending notifications/cancelled", zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
		}
	})
}
