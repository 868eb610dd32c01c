package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// The wire side of a raw tools/call (raw.go): the POST, the answer as JSON
// or as an SSE stream, and what the stream carries before the answer. It
// follows mcp-go v1.2.1's StreamableHTTP (SendRequest, sendHTTP,
// handleSSEResponse, readSSEWithCursor, resumeSSE, handleIncomingRequest),
// so that a downstream sees the same requests and the caller the same
// errors.

// Limits of a raw call.
const (
	// serverRequestTimeout bounds the answer to one server-to-client
	// request, as mcp-go's handleIncomingRequest does.
	serverRequestTimeout = 30 * time.Second
	// errorBodyLimit bounds the body of a refused request that is read for
	// its JSON-RPC error.
	errorBodyLimit = 64 << 10
)

// SSE stream resumption (SEP-1699), mcp-go's defaults.
var (
	defaultSSEReconnectDelay = time.Second
	minSSEReconnectDelay     = 10 * time.Millisecond
)

// rawCall is one raw tools/call in flight.
type rawCall struct {
	s        *session
	w        *wireInfo
	id       string
	relay    *Relay
	cancel   context.CancelFunc // ends the call's context (callRaw's)
	handlers sync.WaitGroup     // server-to-client requests being answered
}

// rawMessage is a JSON-RPC message from the downstream, decoded once with
// encoding/json to classify it: a response, a notification or a request.
// Its id, params and result stay as the downstream sent them; the result
// goes to the caller unchanged (RawResult).
type rawMessage struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// newRequest is a request to the downstream session with mcp-go's headers:
// its own, then the session's outbound headers (which win, as in sendHTTP).
func (c *rawCall) newRequest(ctx context.Context, method string, body []byte, accept string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.s.srv.spec.URL, rd)
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("failed to create request: %w", err))
	}
	h := req.Header
	if body != nil {
		h["Content-Type"] = []string{"application/json"}
	}
	h["Accept"] = []string{accept}
	if c.w.session != "" {
		h[transport.HeaderKeySessionID] = []string{c.w.session}
	}
	h[transport.HeaderKeyProtocolVersion] = []string{c.w.version}
	for name, vals := range c.s.hdr {
		h[name] = vals
	}
	tracing.Inject(ctx, h) // the gateway's own: after the outbound set
	return req, nil
}

// do posts body on ctx, the call's context, and returns the call's answer.
func (c *rawCall) do(ctx context.Context, body []byte) (*RawResult, error) {
	// The request's context is canceled before its body is closed: on
	// HTTP/2, Close can block on a stream that is still being written, and
	// canceling is what ends it (as mcp-go does).
	cancel := c.cancel
	req, err := c.newRequest(ctx, http.MethodPost, body, "application/json, text/event-stream")
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.s.srv.transport.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", err))
	}
	defer resp.Body.Close()
	defer cancel() // first
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated))
	default:
		return nil, refused(resp)
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		var b []byte
		var err error
		if pt := wire.PassThroughFrom(ctx); pt != nil && (resp.ContentLength < 0 || resp.ContentLength > wire.PassThroughAbove) {
			var res *RawResult
			var passed bool
			if res, b, passed, err = c.passThrough(pt, resp); passed {
				return res, err
			}
		} else {
			b, err = readMessage(resp, c.s.srv.m.opts.MaxMessageBytes)
		}
		if errors.Is(err, errTooLarge) {
			return nil, answeredError{transport.NewError(err)}
		}
		if err != nil {
			return nil, transport.NewError(fmt.Errorf("failed to read response: %w", err))
		}
		var msg rawMessage
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, answeredError{transport.NewError(fmt.Errorf("failed to decode response: %w", err))}
		}
		if !c.answers(&msg) {
			return nil, answeredError{transport.NewError(fmt.Errorf("malformed response: not the answer to request %s: %.80s", c.id, b))}
		}
		return answer(&msg)
	case "text/event-stream":
		return c.stream(ctx, resp.Body)
	}
	return nil, transport.NewError(fmt.Errorf("unexpected content type: %s", resp.Header.Get("Content-Type")))
}

// passThrough reads resp, an answer of unknown or large size, and passes
// it through to the caller (wire.PassThrough) when it is larger than
// wire.PassThroughAbove (passed true). A smaller answer, or the error
// reading it, is returned to be taken as any other (b, err).
func (c *rawCall) passThrough(pt *wire.PassThrough, resp *http.Response) (res *RawResult, b []byte, passed bool, err error) {
	limit := c.s.srv.m.opts.MaxMessageBytes
	if resp.ContentLength > int64(limit) {
		return nil, nil, false, &tooLargeError{limit: limit}
	}
	p, err := readPieces(resp.Body, limit, wire.PassThroughAbove)
	defer p.free()
	if err != nil || !p.more {
		if err == nil {
			b = p.bytes()
		}
		return nil, b, false, err
	}
	readers := make([]io.Reader, 0, len(p.list)+1)
	for _, piece := range p.slices() {
		readers = append(readers, bytes.NewReader(piece))
	}
	res, msg, err := pt.Relay(io.MultiReader(append(readers, resp.Body)...), c.id, int64(limit))
	switch {
	case err != nil:
		return nil, nil, true, answeredError{transport.NewError(fmt.Errorf("reading the answer: %w", err))}
	case msg != nil: // no result: an error answer, as any other
		return nil, msg, false, nil
	}
	return res, nil, true, nil
}

// refused is the error for an HTTP status other than 200 and 404: the
// JSON-RPC error in the body if there is one (a TypeScript SDK server's
// "No valid session ID" among them, see sessionRejected), else the status.
func refused(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	var msg rawMessage
	if json.Unmarshal(b, &msg) == nil && msg.Error != nil {
		return msg.Error.AsError()
	}
	return transport.NewError(fmt.Errorf("request failed with status %d: %s", resp.StatusCode, b))
}

// answers reports whether msg is the response to this call.
func (c *rawCall) answers(msg *rawMessage) bool {
	var id string
	return msg.Method == "" && json.Unmarshal(msg.ID, &id) == nil && id == c.id
}

// answer turns the call's response into its result or error. Its errors
// are answers: the call is not sent again, whatever they say.
func answer(msg *rawMessage) (*RawResult, error) {
	if msg.Error != nil {
		de := &downstreamError{RPCError: RPCError{Code: msg.Error.Code, Message: msg.Error.Message}, cause: msg.Error.AsError()}
		if msg.Error.Data != nil {
			de.Data, _ = json.Marshal(msg.Error.Data)
		}
		return nil, answeredError{de}
	}
	res, err := peekResult(msg.Result)
	if err != nil {
		return nil, answeredError{transport.NewError(err)}
	}
	return res, nil
}

// stream reads the call's SSE response until the answer, resuming the stream
// with its last event id when the server ended it before the answer.
func (c *rawCall) stream(ctx context.Context, body io.Reader) (*RawResult, error) {
	cur := wire.Cursor{Retry: -1}
	res, ended, err := c.readEvents(ctx, body, &cur)
	for res == nil && err == nil {
		if !ended || cur.LastID == "" {
			// mcp-go's "unexpected nil response": isLost takes both for a
			// lost connection.
			return nil, transport.NewError(fmt.Errorf("unexpected nil response: the stream ended before the answer: %w", io.ErrUnexpectedEOF))
		}
		res, ended, err = c.resumed(ctx, &cur)
	}
	return res, err
}

// resumed reopens the stream after cur and reads it. The call was
// delivered (its stream had begun): a failure to reopen may end the session
// but never sends the call again.
func (c *rawCall) resumed(ctx context.Context, cur *wire.Cursor) (*RawResult, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	body, err := c.resume(ctx, cur)
	if err != nil {
		cancel()
		return nil, false, deliveredError{transport.NewError(fmt.Errorf("failed to resume the SSE stream for the response: %w", err))}
	}
	defer body.Close()
	defer cancel() // first, as in do
	return c.readEvents(ctx, body, cur)
}

// resume waits the reconnection time and reopens the stream with a GET
// carrying Last-Event-ID.
func (c *rawCall) resume(ctx context.Context, cur *wire.Cursor) (io.ReadCloser, error) {
	delay := defaultSSEReconnectDelay
	if cur.Retry >= 0 {
		delay = max(cur.Retry, minSSEReconnectDelay)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	req, err := c.newRequest(ctx, http.MethodGet, nil, "text/event-stream")
	if err != nil {
		return nil, err
	}
	req.Header.Set("Last-Event-ID", cur.LastID)
	resp, err := c.s.srv.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mediaType != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("unexpected status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.Body, nil
}

// readEvents reads one stream's events, handling each message, until the
// answer (res), an error, or the end of the stream (ended: the server ended
// it; false: it broke off).
func (c *rawCall) readEvents(ctx context.Context, body io.Reader, cur *wire.Cursor) (res *RawResult, ended bool, err error) {
	limit := c.s.srv.m.opts.MaxMessageBytes
	events := wire.NewEventReader(body, cur, limit)
	for {
		data, err := events.Next()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, false, ctx.Err()
		case err == io.EOF:
			return nil, true, nil
		case errors.Is(err, wire.ErrEventTooLarge) || errors.Is(err, errTooLarge):
			if errors.Is(err, wire.ErrEventTooLarge) {
				err = &tooLargeError{limit: limit}
			}
			return nil, false, answeredError{transport.NewError(err)}
		case err != nil:
			return nil, false, transport.NewError(fmt.Errorf("SSE stream error: %w", err))
		}
		if res, err := c.message(ctx, data); res != nil || err != nil {
			return res, false, err
		}
	}
}

// message handles one message of the stream; it returns the call's result
// or error when data is the answer.
func (c *rawCall) message(ctx context.Context, data []byte) (*RawResult, error) {
	var msg rawMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		c.s.srv.m.log.Debug("downstream stream: a message that is not JSON-RPC (skipped)",
			zap.String(fieldServer, c.s.srv.spec.Name), zap.Int("bytes", len(data)), zap.Error(err))
		return nil, nil
	}
	switch {
	case msg.Method != "" && isNullID(msg.ID):
		c.notification(&msg)
	case msg.Method != "":
		c.serverRequest(ctx, &msg)
	case c.answers(&msg):
		return answer(&msg)
	default:
		c.s.srv.m.log.Debug("downstream stream: a response to another request (skipped)", zap.String(fieldServer, c.s.srv.spec.Name))
	}
	return nil, nil
}

func isNullID(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// notification routes one notification of the call's stream: log messages
// to the call's Relay when it takes them (this stream is the call's, so no
// tag is needed), everything else as the session's client would.
func (c *rawCall) notification(msg *rawMessage) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: msg.Method}}
	if len(msg.Params) > 0 {
		if err := json.Unmarshal(msg.Params, &n.Params); err != nil {
			return
		}
	}
	if r := c.relay; r != nil && r.Log != nil && n.Method == string(mcp.MethodNotificationMessage) {
		params := make(map[string]any, len(n.Params.AdditionalFields)+1)
		for k, v := range n.Params.AdditionalFields {
			params[k] = v
		}
		if len(n.Params.Meta) > 0 {
			params["_meta"] = n.Params.Meta
		}
		r.Log(params)
		return
	}
	c.s.onNotification(n)
}

// serverRequest answers a server-to-client request of the call's stream on
// a goroutine of its own (the stream goes on meanwhile), with the session's
// handler, and POSTs the answer back. ctx is the call's: it carries the
// Relay and the op mark serverRequest looks for.
func (c *rawCall) serverRequest(ctx context.Context, msg *rawMessage) {
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, Method: msg.Method}
	if err := json.Unmarshal(msg.ID, &req.ID); err != nil {
		return
	}
	if len(msg.Params) > 0 {
		req.Params = msg.Params // relayed as the downstream sent them
	}
	c.handlers.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, serverRequestTimeout)
		defer cancel()
		resp, err := c.s.serverRequest(ctx, req)
		if err != nil || resp == nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, fmt.Sprint(err), nil)
		}
		// The answer goes out even when the call's context has ended (the
		// wait for the caller was cancelled): the downstream must not wait.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		if err := c.reply(rctx, resp); err != nil {
			c.s.srv.m.log.Debug("answering a server-to-client request", zap.String(fieldServer, c.s.srv.spec.Name),
				zap.String("method", req.Method), zap.Error(c.s.scrub(err)))
		}
	})
}

// reply POSTs the answer to a server-to-client request.
func (c *rawCall) reply(ctx context.Context, resp *transport.JSONRPCResponse) error {
	body, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	req, err := c.newRequest(ctx, http.MethodPost, body, "application/json, text/event-stream")
	if err != nil {
		return err
	}
	res, err := c.s.srv.transport.RoundTrip(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, errorBodyLimit))
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		return errors.New("the server refused the answer: " + res.Status)
	}
	return nil
}
