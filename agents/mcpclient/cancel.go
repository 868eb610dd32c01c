package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Cancelling a downstream call. mcp-go's client sends notifications/cancelled
// for a request whose context ends only over stdio; over HTTP it counts on
// the connection closing. A server whose session-based streams are
// resumable (the Go SDK's, run stateful) does not take a closed stream for a
// cancellation and runs the tool to its end. So the session's HTTP transport
// notes the JSON-RPC id of a call's tools/call POST (mcp-go's client numbers
// requests itself and does not say), and a call whose context ends before
// its result sends the cancellation on the session itself.

// cancelTimeout bounds sending one notifications/cancelled.
const cancelTimeout = 5 * time.Second

// sentCall records the JSON-RPC id of one call's request.
type sentCall struct {
	mu sync.Mutex
	id json.RawMessage
}

type sentCallKey struct{}

func (c *sentCall) get() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// noteSent records the id of req when it is the tools/call POST of a call
// that asked for it (the context carries a *sentCall). The body is read
// from a copy (GetBody), and only up to the id and method, which mcp-go
// writes before the params.
func noteSent(req *http.Request) {
	rec, ok := req.Context().Value(sentCallKey{}).(*sentCall)
	if !ok || req.Method != http.MethodPost || req.GetBody == nil {
		return
	}
	body, err := req.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	if id := toolsCallID(json.NewDecoder(body)); id != nil {
		rec.mu.Lock()
		rec.id = id
		rec.mu.Unlock()
	}
}

// toolsCallID returns the id of the JSON-RPC message dec reads when it is a
// tools/call request, reading no further than its id and method.
func toolsCallID(dec *json.Decoder) json.RawMessage {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	method := ""
	for dec.More() && (id == nil || method == "") {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		switch key {
		case "id":
			err = dec.Decode(&id)
		case "method":
			err = dec.Decode(&method)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil
		}
	}
	if method != string(mcp.MethodToolsCall) {
		return nil
	}
	return id
}

// cancelOnEnd returns ctx set up to note the call's request id, and the
// function to run when the call has returned: if the call's context ended
// first, it tells the downstream (in the background, best effort).
func (s *session) cancelOnEnd(ctx context.Context, cli *client.Client) (context.Context, func()) {
	if _, stdio := cli.GetTransport().(*transport.Stdio); stdio {
		return ctx, func() {} // mcp-go's client sends it there
	}
	rec := &sentCall{}
	return context.WithValue(ctx, sentCallKey{}, rec), func() { s.cancelIfEnded(ctx, cli, rec.get()) }
}

// cancelIfEnded tells the downstream, in the background and best effort,
// that the request id was cancelled, if ctx (the call's) has ended.
func (s *session) cancelIfEnded(ctx context.Context, cli *client.Client, id json.RawMessage) {
	if ctx.Err() == nil || id == nil {
		return
	}
	reason := context.Cause(ctx).Error()
	s.srv.m.spawn(func() {
		cctx, cancel := context.WithTimeout(s.srv.m.ctx, cancelTimeout)
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
