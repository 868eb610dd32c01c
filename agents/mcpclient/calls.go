package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// opFunc is one downstream request on a connected client. The op strings
// that name requests in errors and logs start with the JSON-RPC method.
type opFunc func(ctx context.Context, s *session, cli *client.Client) error

// Tools returns the server's tool list for the header set hdr, cached per
// server and fingerprint until a notifications/tools/list_changed, an
// Invalidate or the session's end. Schemas are the server's JSON, unchanged
// (RawInputSchema, RawOutputSchema). The slice is the caller's; the tools'
// schemas are shared and must not be modified.
func (m *Manager) Tools(ctx context.Context, server string, hdr http.Header) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	err := m.do(ctx, server, string(mcp.MethodToolsList), hdr, func(ctx context.Context, s *session, cli *client.Client) error {
		var err error
		tools, err = m.sessionTools(ctx, s, cli)
		return err
	})
	return slices.Clone(tools), err
}

// CallTool calls tool on server with the server's per-call timeout, sending
// the headers hdr. onProgress (may be nil) receives the downstream progress
// of this call only, never after CallTool has returned; so does
// opts.Relay, if any, for log messages and server-to-client requests.
// The result is the downstream's, unchanged; a result with isError is not an
// error here.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error) {
	var raw json.RawMessage
	var argsErr error // failed as mcp-go's transport fails a request it cannot encode
	if args != nil {
		if raw, argsErr = json.Marshal(args); argsErr != nil {
			argsErr = transport.NewError(fmt.Errorf("failed to marshal request: %w", argsErr))
		}
	}
	// The caller's members go on CallToolRaw and CallToolJSON only.
	return m.typedCall(ctx, server, tool, raw, hdr, onProgress, CallOptions{Relay: opts.Relay},
		func(ctx context.Context, s *session, cli *client.Client, r rawRequest) (*mcp.CallToolResult, error) {
			if argsErr != nil {
				return nil, argsErr
			}
			return s.callTyped(ctx, cli, r)
		})
}

// toolCall is one downstream tools/call between its checks and its count:
// begun by beginTool, observed and ended by finish.
type toolCall struct {
	m      *Manager
	server string
	start  time.Time
	span   trace.Span
	r      rawRequest
	done   func() // unregisters the progress token: deferred by the caller
}

// beginTool checks a call of tool on server (the guard: allowCall), starts
// its span and builds its request; ctx is the call's from then on. Every
// begun call is finished once, and its done deferred.
func (m *Manager) beginTool(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (context.Context, *toolCall, error) {
	if err := m.allowCall(ctx, server, tool, hdr); err != nil {
		return ctx, nil, err
	}
	c := &toolCall{m: m, server: server, start: time.Now()}
	ctx, c.span = m.startCall(ctx, server, tool)                  // trace.go
	c.r, c.done = m.rawRequest(ctx, tool, args, onProgress, opts) // its relay goes in ctx with the op (doHeld)
	return ctx, c, nil
}

// finish counts the call (metrics, span) with its outcome.
func (c *toolCall) finish(isError bool, err error) {
	c.m.observe(c.server, c.start, isError, err)
	endCall(c.span, isError, err)
}

// typedCall is a tools/call whose result is mcp-go's type: begun, run
// through do by fn, finished.
func (m *Manager) typedCall(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions,
	fn func(ctx context.Context, s *session, cli *client.Client, r rawRequest) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	ctx, c, err := m.beginTool(ctx, server, tool, args, hdr, onProgress, opts)
	if err != nil {
		return nil, err
	}
	defer c.done()
	var res *mcp.CallToolResult
	err = m.doHeld(ctx, server, callOp(tool), c.r.relay, hdr, nil, func(ctx context.Context, s *session, cli *client.Client) error {
		var err error
		res, err = fn(ctx, s, cli, c.r)
		return err
	})
	c.finish(err == nil && res != nil && res.IsError, err)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// callTyped is one tools/call through mcp-go's transport (send), its
// result decoded as mcp-go's client decodes it. A result that asks for
// input comes back as the downstream sent it, as on the raw path, for the
// caller's input-required bridge to pass through.
func (s *session) callTyped(ctx context.Context, cli *client.Client, r rawRequest) (*mcp.CallToolResult, error) {
	resp, err := s.send(ctx, cli, r.relay, r.params())
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return mcp.ParseCallToolResult(&resp.Result)
}

// send is one tools/call with params (rawRequest.params) through mcp-go's transport
// (SendRequest, as mcp-go's client sends it on a 2025-era session), with
// the call's relay (relayed) and its cancellation downstream: the request
// id is the call's own, so a call whose context ends first sends
// notifications/cancelled for it (cancel.go).
func (s *session) send(ctx context.Context, cli *client.Client, relay *Relay, params json.RawMessage) (*transport.JSONRPCResponse, error) {
	call, done := s.relayed(ctx, cli, relay)
	defer done()
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err) // not sent: nothing to cancel
	}
	id := s.callID()
	defer s.cancelIfEnded(ctx, cli, id)
	resp, err := call.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION,
		ID: mcp.NewRequestId(id), Method: string(mcp.MethodToolsCall), Params: params})
	if err != nil {
		err = transport.NewError(err) // as mcp-go's client wraps it (plainSend)
		switch msg := err.Error(); {
		case strings.Contains(msg, errResume):
			err = deliveredError{Err: err} // the stream had begun: never sent again
		case strings.Contains(msg, errDecode):
			err = answeredError{Err: err} // the session is not lost for it
		}
		return nil, err
	}
	if got, ok := resp.ID.Value().(string); !resp.ID.IsNil() && (!ok || got != id) {
		// mcp-go (v1.2.1) returns the first response it reads, whatever
		// its id; as wire.ClientCall does, another request's is not the
		// call's answer. A null id is an error about this request that the
		// server could not tie to it (a session it no longer knows, say,
		// which the caller's error handling reconnects for).
		return nil, answeredError{Err: transport.NewError(fmt.Errorf("malformed response: not the answer to request %s: id %s", id, resp.ID.String()))}
	}
	return resp, nil
}

// errResume is how mcp-go's transport (v1.2.1) says that a response stream
// the server ended early could not be reopened; it wraps the GET's error
// (a 404 reads as ErrSessionTerminated), which would otherwise pass for a
// call that never reached the server.
const errResume = "failed to resume the SSE stream"

// errDecode is how mcp-go's transport (v1.2.1) says that a JSON answer,
// status 200, could not be read: the downstream answered the call.
const errDecode = "failed to decode response"

// observe records one CallTool in the metrics. A tool result with isError
// counts as outcome "error".
func (m *Manager) observe(server string, start time.Time, isError bool, err error) {
	mt := m.opts.Metrics
	if mt == nil {
		return
	}
	if _, ok := m.servers[server]; !ok {
		return // unknown names must not become label values
	}
	outcome := Outcome(err)
	if err == nil && isError {
		outcome = "error"
	}
	mt.DownstreamCalls.WithLabelValues(server, outcome).Inc()
	mt.DownstreamDuration.WithLabelValues(server).Observe(time.Since(start).Seconds())
}

// do runs fn on the session of (server, hdr) under the server's timeout.
func (m *Manager) do(ctx context.Context, server, op string, hdr http.Header, fn opFunc) error {
	return m.doHeld(ctx, server, op, keepRelay, hdr, nil, fn)
}

// doHeld is do whose fn may leave a result streaming (*held, Streamed):
// the call's context, and its place in Close's wait, then last until that
// result is closed. relay is the op's Relay (nil: none), put in its
// context with the op; keepRelay keeps ctx's (withRelay).
func (m *Manager) doHeld(ctx context.Context, server, op string, relay *Relay, hdr http.Header, held **RawResult, fn opFunc) (err error) {
	srv, err := m.lookup(server)
	if err != nil {
		return err
	}
	defer func() { err = scrub(err, hdr, srv.secrets) }() // scrub.go
	ctx, end, ok := m.begin(ctx, srv.spec.Timeout)
	defer func() {
		if err == nil && held != nil && (*held).Streamed() {
			(*held).OnClose(func(error) { end() })
			return
		}
		end()
	}()
	if !ok {
		return srv.wrap(ctx, op, errClosed)
	}
	ctx = withOp(ctx, op, srv.callerAuthOf(ctx, hdr), relay) // reqctx.go, callerauth.go
	s, err := srv.acquire(ctx, op, hdr)
	if err != nil {
		return srv.wrap(ctx, op, err)
	}
	defer srv.release(s)
	return srv.run(ctx, s, op, fn)
}

// run calls fn, reconnecting once if the session was lost. A tools/call is
// repeated only when the downstream cannot have run it (its session was
// unknown, or the connection was refused); otherwise the session is still
// replaced for the next call but this call fails with ErrUnavailable.
func (srv *remote) run(ctx context.Context, s *session, op string, fn opFunc) error {
	cli, err := s.client(ctx)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			srv.discard(s) // a failed connect is not kept in the pool
		}
		return srv.wrap(ctx, op, err)
	}
	err = plainSend(fn(ctx, s, cli))
	if err, ok := s.settle(ctx, cli, err); ok {
		return srv.wrap(ctx, op, err)
	}
	err = s.exitNote(ctx, cli, err) // stdio.go
	if err == nil || ctx.Err() != nil || !isLost(err) {
		return srv.wrap(ctx, op, err)
	}
	if strings.HasPrefix(op, string(mcp.MethodToolsCall)) && !notDelivered(err) {
		s.drop(ctx, cli)
		return srv.wrap(ctx, op, fmt.Errorf("%w: session lost during the call: %w", ErrUnavailable, err))
	}
	srv.m.log.Info("downstream session lost, reconnecting",
		zap.String(fieldServer, srv.spec.Name), zap.String(fieldOp, op), zap.Error(s.scrub(err)))
	if cli, err = s.replace(ctx, cli); err != nil {
		return srv.wrap(ctx, op, err)
	}
	err = plainSend(fn(ctx, s, cli))
	if err, ok := s.settle(ctx, cli, err); ok {
		return srv.wrap(ctx, op, err)
	}
	err = s.exitNote(ctx, cli, err)
	if err != nil && ctx.Err() == nil && isLost(err) {
		s.drop(ctx, cli)
		err = fmt.Errorf("%w: session lost twice: %w", ErrUnavailable, err)
	}
	return srv.wrap(ctx, op, err)
}

// plainSend shortens mcp-go's error for a request it could not send,
// "transport error: failed to send request: failed to send request: Post
// ...: <cause>" (its client's SendRequest and sendHTTP both prefix it), to
// net/http's own error, `Post "<url>": <cause>`. The chain is kept for
// errors.Is and errors.As (isLost, notDelivered, Outcome).
func plainSend(err error) error {
	if err == nil {
		return nil
	}
	var te *transport.Error
	var ue *url.Error
	if !errors.As(err, &te) || te.Err == nil || !errors.As(err, &ue) ||
		!strings.HasPrefix(te.Err.Error(), "failed to send request: ") {
		return err
	}
	return &scrubbedError{msg: ue.Error(), err: err}
}

// wrap names the server and the operation in err. After Close every failure is
// ErrUnavailable; otherwise, when the call's context has ended, that is the
// error to classify by, whatever the transport said.
func (srv *remote) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil // before te, which errors.As moves to the heap
	}
	closed := srv.m.isClosed()
	var te *timeoutError
	switch {
	case closed && !errors.Is(err, errClosed):
		err = fmt.Errorf("%w: %v", errClosed, err)
	case !closed && errors.As(context.Cause(ctx), &te) && !errors.As(err, new(*timeoutError)):
		// The server's own timeout ended the call: say so, not only
		// "context deadline exceeded".
		err = fmt.Errorf("%w: %w", te, err)
	case !closed && ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		err = fmt.Errorf("%w: %v", ctx.Err(), err)
	}
	return fmt.Errorf("downstream %q: %s: %w", srv.spec.Name, op, err)
}

// timeoutError is the cause of a call's context when the server's per-call
// timeout ended it. It matches context.DeadlineExceeded, so Outcome counts it
// as a timeout.
type timeoutError struct{ timeout time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("no answer within the server's timeout of %s", e.timeout)
}

func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// isLost reports whether err means the session or its connection is gone,
// as opposed to an error answer from a working session.
func isLost(err error) bool {
	if answered(err) {
		return false
	}
	for _, target := range []error{
		transport.ErrSessionTerminated, transport.ErrTransportClosed,
		io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || sessionRejected(err) {
		return true
	}
	// mcp-go's SSE transport reports a closed transport only in text. Its
	// Streamable HTTP transport (v1.2.1) reports a response stream that broke
	// off before the result (the connection cut mid-SSE) as "unexpected nil
	// response", the read error only logged.
	msg := err.Error()
	return strings.Contains(msg, "connection has been closed") ||
		strings.Contains(msg, "transport has been closed") ||
		strings.Contains(msg, "unexpected nil response")
}

// sessionRejected reports an error answer refusing the session id. The
// specification says 404, which mcp-go turns into ErrSessionTerminated, but
// servers built on the TypeScript SDK's example (server-everything among
// them) answer HTTP 400 with a JSON-RPC error "Bad Request: No valid session
// ID provided", which mcp-go returns as that error, status dropped.
//
// It goes by the text, so it is kept narrow: an error answer with one of the
// JSON-RPC standard codes is a tool's or a method's own (a tool may well say
// "session not found" of its own sessions), and never a rejection; the TS
// SDK's comes with -32000, which mcp-go returns as a plain error.
func sessionRejected(err error) bool {
	if answered(err) || isStandardRPCError(err) {
		return false
	}
	return strings.Contains(strings.ToLower(err.Error()), "no valid session id")
}

// isStandardRPCError reports an error answer that mcp-go maps to one of the
// JSON-RPC standard error codes.
func isStandardRPCError(err error) bool {
	for _, target := range []error{mcp.ErrParseError, mcp.ErrInvalidRequest, mcp.ErrMethodNotFound,
		mcp.ErrInvalidParams, mcp.ErrInternalError, mcp.ErrRequestInterrupted, mcp.ErrResourceNotFound} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// answeredError marks an error of a call that proves the downstream
// received it: it answered it (with a JSON-RPC error, or a result that
// could not be read), or its response stream had begun. Such a call is
// never sent again, and does not count as a lost session.
type answeredError struct{ Err error }

func (e answeredError) Error() string { return e.Err.Error() }
func (e answeredError) Unwrap() error { return e.Err }

func answered(err error) bool {
	var a answeredError
	return errors.As(err, &a)
}

// deliveredError marks an error of a call after the downstream had begun
// to answer it (its response stream broke off and could not be reopened):
// the session may be gone, but the call is never sent again.
type deliveredError struct{ Err error }

func (e deliveredError) Error() string { return e.Err.Error() }
func (e deliveredError) Unwrap() error { return e.Err }

// downstreamError is a downstream's JSON-RPC error answer to a call: its
// code, message and data as sent (RPCError), and mcp-go's mapping of it
// (Cause), whose wording a caller sees and against whose sentinels
// errors.Is still works.
type downstreamError struct {
	RPCError
	Cause error
}

func (e *downstreamError) Error() string   { return e.Cause.Error() }
func (e *downstreamError) Unwrap() []error { return []error{e.Cause, &e.RPCError} }

// errorAnswer is the error of a downstream's JSON-RPC error answer to a
// call: an answer, never sent again.
func errorAnswer(d *mcp.JSONRPCErrorDetails) error {
	de := &downstreamError{RPCError: RPCError{Code: d.Code, Message: d.Message}, Cause: d.AsError()}
	if d.Data != nil {
		de.Data, _ = json.Marshal(d.Data)
	}
	return answeredError{de}
}

// answerOf turns the response to a tools/call, its result or error as the
// downstream sent them (mcp-go's transport.SendRequest, the path of the
// raw call's sessions with the switch off), into the call's result or
// error. Its errors are answers: the call is not sent again, whatever
// they say.
func answerOf(result json.RawMessage, rpcErr *mcp.JSONRPCErrorDetails) (*RawResult, error) {
	if rpcErr != nil {
		return nil, errorAnswer(rpcErr)
	}
	res, err := wire.PeekResult(result)
	if err != nil {
		return nil, answeredError{transport.NewError(err)}
	}
	return res, nil
}

// classified is the error of a raw call (wire.ClientCall) with its retry
// class: an answer the wire package read, or a stream it could not reopen.
func classified(err error) error {
	if err == nil {
		return nil // before the targets below, which escape
	}
	var ans *wire.AnswerError
	var rpc *wire.ErrorAnswer
	var lost *wire.ResumeError
	switch {
	case errors.As(err, &rpc):
		return errorAnswer(&rpc.Details)
	case errors.As(err, &ans):
		return answeredError{ans.Err}
	case errors.As(err, &lost):
		return deliveredError{lost.Err}
	}
	return err
}

// notDelivered reports whether err proves the request never ran: the
// downstream rejected the session or the connection was refused. A request
// that failed after it was written (EOF, reset) may have run: net/http does
// not repeat such a POST either.
func notDelivered(err error) bool {
	var d deliveredError
	if answered(err) || errors.As(err, &d) {
		return false
	}
	if errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, syscall.ECONNREFUSED) || sessionRejected(err) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// Capabilities returns the capabilities the server declared for the session
// of hdr, connecting if needed.
func (m *Manager) Capabilities(ctx context.Context, server string, hdr http.Header) (mcp.ServerCapabilities, error) {
	var caps mcp.ServerCapabilities
	err := m.do(ctx, server, string(mcp.MethodInitialize), hdr, func(_ context.Context, s *session, cli *client.Client) error {
		caps = s.serverCaps(cli)
		return nil
	})
	return caps, err
}

// ListPrompts returns the server's prompts, all pages.
func (m *Manager) ListPrompts(ctx context.Context, server string, hdr http.Header) (*mcp.ListPromptsResult, error) {
	return request(ctx, m, server, mcp.MethodPromptsList, hdr, func(ctx context.Context, cli *client.Client) (*mcp.ListPromptsResult, error) {
		return cli.ListPrompts(ctx, mcp.ListPromptsRequest{})
	})
}

// GetPrompt renders the prompt name with args; the downstream's
// server-to-client requests meanwhile go to relay (nil: refused).
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string, hdr http.Header, relay *Relay) (*mcp.GetPromptResult, error) {
	ctx = withRelay(ctx, relay)
	var req mcp.GetPromptRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return request(ctx, m, server, mcp.MethodPromptsGet, hdr, func(ctx context.Context, cli *client.Client) (*mcp.GetPromptResult, error) {
		return cli.GetPrompt(ctx, req)
	})
}

// ListResources returns the server's resources, all pages.
func (m *Manager) ListResources(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourcesResult, error) {
	return request(ctx, m, server, mcp.MethodResourcesList, hdr, func(ctx context.Context, cli *client.Client) (*mcp.ListResourcesResult, error) {
		return cli.ListResources(ctx, mcp.ListResourcesRequest{})
	})
}

// ListResourceTemplates returns the server's resource templates, all pages.
func (m *Manager) ListResourceTemplates(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourceTemplatesResult, error) {
	return request(ctx, m, server, mcp.MethodResourcesTemplatesList, hdr, func(ctx context.Context, cli *client.Client) (*mcp.ListResourceTemplatesResult, error) {
		return cli.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	})
}

// ReadResource reads the resource at uri; the downstream's server-to-client
// requests meanwhile go to relay (nil: refused).
func (m *Manager) ReadResource(ctx context.Context, server, uri string, hdr http.Header, relay *Relay) (*mcp.ReadResourceResult, error) {
	ctx = withRelay(ctx, relay)
	var req mcp.ReadResourceRequest
	req.Params.URI = uri
	return request(ctx, m, server, mcp.MethodResourcesRead, hdr, func(ctx context.Context, cli *client.Client) (*mcp.ReadResourceResult, error) {
		return cli.ReadResource(ctx, req)
	})
}

// request adapts a typed client call to do.
func request[T any](ctx context.Context, m *Manager, server string, method mcp.MCPMethod, hdr http.Header, call func(context.Context, *client.Client) (*T, error)) (*T, error) {
	var out *T
	err := m.do(ctx, server, string(method), hdr, func(ctx context.Context, _ *session, cli *client.Client) error {
		var err error
		out, err = call(ctx, cli)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// callOp names a tools/call of tool in errors and logs: tools/call "name".
func callOp(tool string) string {
	var b [96]byte // one string made, not three
	return string(strconv.AppendQuote(append(b[:0], mcp.MethodToolsCall+" "...), tool))
}
