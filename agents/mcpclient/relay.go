package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// Relay is what the caller of one downstream call takes from the downstream
// while the call runs: its log messages and its server-to-client requests
// (elicitation, sampling, roots). The agent runtime hands it to the call
// (CallOptions.Relay; GetPrompt and ReadResource take one too); a call
// without one gets neither (log messages go to
// Options.OnLogMessage, server-to-client requests are refused).
//
// Tying a message to its call. mcp-go's client hands every notification to
// one handler per transport, without the request it came with; but a
// Streamable HTTP server sends what a call causes on that call's response
// stream (SSE). So a call that relays logs gets a transport of its own on
// the session, with the call's notification handler (relayed); the raw
// path reads the call's stream itself (rawstream.go). A server-to-client
// request arrives with a context derived from the call's (mcp-go passes
// the request's context to the handler), so the relay is found there. Over stdio and legacy SSE every
// message arrives on one shared stream and cannot be tied to a call: logs go
// to OnLogMessage, server-to-client requests are refused.
type Relay struct {
	// Log receives the params of each notifications/message the downstream
	// sends on this call's stream (level, logger, data, _meta), as sent. It
	// runs on the transport's reader goroutine and must not block.
	Log func(params map[string]any)
	// LogLevel, when set, is the least severe level the caller wants: the
	// downstream session is asked for at least that verbosity before the
	// call (for 2026-07-28 callers, who state a level per request).
	LogLevel mcp.LoggingLevel
	// Request answers an elicitation/create, sampling/createMessage or
	// roots/list the downstream sends during this call (method, params and
	// result as JSON, unchanged). An *RPCError it returns reaches the
	// downstream as it is. nil: refused.
	Request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Notify sends a notification of the gateway's own to the caller of
	// the call (an oauth server's notifications/elicitation/complete once
	// the caller connected), or is nil: none.
	Notify func(method string, params map[string]any) error
}

// RPCError is a JSON-RPC error for the downstream, as a Relay function
// returns it: the caller's own error answer, or why the request could not
// reach a caller (wire's).
type RPCError = wire.RPCError

// CallExtras are members a caller's tools/call adds to the downstream's
// request (raw calls on Streamable HTTP sessions): Params beside name and
// arguments (a 2026-07-28 caller's inputResponses and requestState, passed
// back to a downstream that asked for input in its result), and Meta beside
// the progress token (the caller's declared client capabilities, which a
// downstream that reads them per request then honours).
type CallExtras struct {
	Params map[string]json.RawMessage
	Meta   map[string]json.RawMessage
}

// task is the caller's task param (a task-augmented call), or nil.
func (x CallExtras) task() json.RawMessage {
	return x.Params["task"]
}

// logSink guards one call's log callback so that it never runs after the
// call has returned (mcp-go's stream reader may still be reading).
type logSink struct {
	mu   sync.Mutex
	fn   func(map[string]any)
	done bool
}

// deliver hands a log message's params (mcp-go's parse, not kept) to the
// call, unless it has returned.
func (k *logSink) deliver(p mcp.NotificationParams) {
	params := logParams(p)
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done {
		k.fn(params)
	}
}

// logParams are a log message's params as a Relay's Log takes them: its
// fields, and _meta when it has one.
func logParams(p mcp.NotificationParams) map[string]any {
	params := make(map[string]any, len(p.AdditionalFields)+1)
	for name, v := range p.AdditionalFields {
		params[name] = v
	}
	if len(p.Meta) > 0 {
		params["_meta"] = p.Meta
	}
	return params
}

func (k *logSink) end() {
	k.mu.Lock()
	k.done = true
	k.mu.Unlock()
}

// Errors a downstream gets for server-to-client requests the gateway cannot
// take to a caller.
const (
	errNoCall = "%s is relayed only when it comes on the response stream of the request it is " +
		"for (Streamable HTTP); this one cannot be tied to a caller's request"
	errNoRelay = "%s is not relayed for this request: only proxy agents relay it, to their caller"
)

// serverRequest answers the server-to-client requests of one session's
// client. It replaces mcp-go's own handler (client.Start installs that one):
// elicitation, sampling and roots requests that come on a call's stream go
// to the call's Relay, which takes them to the caller; anything else gets an
// error that says why, not mcp-go's "no handler configured".
func (s *session) serverRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	fail := func(code int, msg string) (*transport.JSONRPCResponse, error) {
		return transport.NewJSONRPCErrorResponse(req.ID, code, msg, nil), nil
	}
	method := mcp.MCPMethod(req.Method)
	switch method {
	case mcp.MethodPing:
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
	case mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage, mcp.MethodListRoots:
	default:
		return fail(mcp.METHOD_NOT_FOUND, fmt.Sprintf("method %q is not supported by pallasgw's downstream client", req.Method))
	}
	call := callOf(ctx)
	relay := call.relay
	switch {
	case call.op == "":
		return fail(mcp.INVALID_REQUEST, fmt.Sprintf(errNoCall, method))
	case relay == nil || relay.Request == nil:
		return fail(mcp.INVALID_REQUEST, fmt.Sprintf(errNoRelay, method))
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return fail(mcp.INVALID_PARAMS, fmt.Sprintf("%s params: %v", method, err))
	}
	res, err := relay.Request(ctx, req.Method, params)
	if rpcErr := (*RPCError)(nil); errors.As(err, &rpcErr) {
		var data any // absent, not null, without Data
		if len(rpcErr.Data) > 0 {
			data = rpcErr.Data
		}
		return transport.NewJSONRPCErrorResponse(req.ID, rpcErr.Code, rpcErr.Message, data), nil
	}
	if err != nil {
		return fail(mcp.INTERNAL_ERROR, err.Error())
	}
	return transport.NewJSONRPCResultResponse(req.ID, res), nil
}

// SetLogLevel asks the session of server for hdr to send log messages at
// level and above (logging/setLevel), and remembers the level, which a
// reconnected session is asked for again. A server that does not declare
// logging is not asked. The level belongs to the session, that is to the
// outbound header set: callers that send the same headers share it.
func (m *Manager) SetLogLevel(ctx context.Context, server string, level mcp.LoggingLevel, hdr http.Header) error {
	return m.do(ctx, server, string(mcp.MethodSetLogLevel), hdr, func(ctx context.Context, s *session, cli *client.Client) error {
		return s.setLevel(ctx, cli, level, false)
	})
}

// setLevel records level and sends it to the downstream; with lowerOnly,
// only when it is more verbose than the level the session has.
func (s *session) setLevel(ctx context.Context, cli *client.Client, level mcp.LoggingLevel, lowerOnly bool) error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if lowerOnly && s.logLevel != "" && level.ShouldSendTo(s.logLevel) {
		return nil
	}
	s.logLevel = level
	if s.serverCaps(cli).Logging == nil {
		return nil
	}
	var req mcp.SetLevelRequest
	req.Params.Level = level
	return cli.SetLevel(ctx, req)
}

// resendLevel asks a freshly connected client for the session's level.
func (s *session) resendLevel(ctx context.Context, cli *client.Client) {
	s.logMu.Lock()
	level := s.logLevel
	s.logMu.Unlock()
	if level == "" || s.serverCaps(cli).Logging == nil {
		return
	}
	var req mcp.SetLevelRequest
	req.Params.Level = level
	if err := cli.SetLevel(ctx, req); err != nil {
		s.srv.m.log.Debug("setting the log level of a new session", zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
	}
}

// relayed prepares one typed call of relay r on cli: it raises the
// session's verbosity to r.LogLevel and returns the client the call goes
// through, and the function that ends the call's log routing (r.Log is not
// called after it returns).
//
// When r takes the call's log messages and cli is a Streamable HTTP client,
// that client is the call's own, on cli's session: a StreamableHTTP
// transport sharing the session's HTTP client, session id and protocol
// version, whose notification handler is the call's. mcp-go's client
// (v1.2.1) hands every notification to one handler per transport, without
// the request whose stream carried it; a transport per call is how a log
// message reaches the call it belongs to. Progress and list changes go to
// the session's handler as they would. Server-to-client requests reach
// serverRequest with the call's context either way. The call's client is
// never closed: Close would end the session with a DELETE; it holds no
// goroutine once its request has returned. Anything else (no log relay,
// stdio and SSE sessions, where every message shares one stream) goes
// through cli, and log messages to Options.OnLogMessage.
func (s *session) relayed(ctx context.Context, cli *client.Client, r *Relay) (*client.Client, func()) {
	s.raiseLevel(ctx, cli, r)
	w := s.wire.Load()
	if r == nil || r.Log == nil || w == nil || w.cli != cli {
		return cli, func() {}
	}
	sink := &logSink{fn: r.Log}
	tr, err := transport.NewStreamableHTTP(s.srv.spec.URL,
		transport.WithHTTPBasicClient(s.httpClient()), // the session's headers, bound and transport
		transport.WithHTTPLogger(s.slog()), transport.WithSession(w.session))
	if err != nil { // the URL parsed for the session's own transport
		return cli, func() {}
	}
	tr.SetProtocolVersion(w.version)
	call := client.NewClient(tr, client.WithSession(), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	call.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			sink.deliver(n.Params)
			return
		}
		s.onNotification(n)
	})
	if err := call.Start(ctx); err != nil { // no GET stream: returns at once
		return cli, func() {}
	}
	tr.SetRequestHandler(s.serverRequest) // after Start, which installs mcp-go's
	return call, sink.end
}

// raiseLevel asks the session for at least r.LogLevel, if r states one.
func (s *session) raiseLevel(ctx context.Context, cli *client.Client, r *Relay) {
	if r == nil || r.LogLevel == "" {
		return
	}
	if err := s.setLevel(ctx, cli, r.LogLevel, true); err != nil {
		s.srv.m.log.Debug("raising the log level for a call", zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
	}
}
