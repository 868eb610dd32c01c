package mcpclient

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// The session's side of a raw tools/call (raw.go): the wire package's
// ClientCall POSTs it and reads the answer; the session gives it its
// headers, its server's transport and bound, the handler of the server's
// requests, and where the stream's notifications go.

// clientCall is the raw call with id on the session of w, relaying to
// relay (nil: none).
func (s *session) clientCall(ctx context.Context, w *wireInfo, id string, relay *Relay) *wire.ClientCall {
	return &wire.ClientCall{
		URL: s.srv.spec.URL, Transport: s.srv.transport,
		Session: w.session, Version: w.version, Fixed: w.fixed, Header: s.callHeader(ctx),
		ID: id, Limit: s.srv.m.opts.MaxMessageBytes,
		Notify:  func(method string, params json.RawMessage) { s.callNotification(relay, method, params) },
		Request: s.rawRequest,
		Debug:   s.rawDebug,
	}
}

// debugCall logs what a raw call's client noticed and let pass.
func (s *session) debugCall(msg string, err error) {
	s.srv.m.log.Debug(msg, zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
}

// callNotification routes one notification of a raw call's stream: log
// messages to the call's Relay when it takes them (this stream is the
// call's, so no tag is needed), everything else as the session's client
// would.
func (s *session) callNotification(relay *Relay, method string, raw json.RawMessage) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &n.Params); err != nil {
			return
		}
	}
	if relay != nil && relay.Log != nil && n.Method == string(mcp.MethodNotificationMessage) {
		relay.Log(logParams(n.Params))
		return
	}
	s.onNotification(n)
}

// callRawOn runs the raw tools/call r with id on the session of w (raw.go callRaw).
func (s *session) callRawOn(ctx context.Context, w *wireInfo, id string, r rawRequest) (*RawResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	cc := s.clientCall(ctx, w, id, r.relay)
	cc.Stream = r.stream
	res, err := cc.Do(ctx, cancel, callBody(id, r))
	if err == nil && res.Streamed() {
		res.OnClose(func(error) { cancel() }) // the body reads on ctx
	} else {
		cancel()
	}
	return res, classified(err)
}
