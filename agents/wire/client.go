package wire

// The client-side raw tools/call (ClientCall): a downstream's tools/call
// POSTed by hand on its Streamable HTTP session, its answer (JSON, or an
// SSE stream and what it carries before the answer) read as bytes, so that
// a proxy writes the downstream's result through (raw.go) or has a large
// one streamed from the body to copy out (body.go). It follows mcp-go v1.2.1's
// StreamableHTTP (SendRequest, sendHTTP, handleSSEResponse,
// readSSEWithCursor, resumeSSE, handleIncomingRequest), so that a
// downstream sees the same requests and the caller the same errors.
// agents/mcpclient runs it on a session it opened with mcp-go and hands it
// what is the session's: its headers, the handler of the server's
// requests, where notifications go. Gap: transport.SendRequest reads an
// answer whole and decodes it (6.1-6.3 copies of a large result), and
// hands a call's notifications to one handler per transport, without the
// call. Buys: a large result streamed from the body with no copy held
// (test/bench/README.md, "Large results"); a call's log messages reach
// it. Retired by: a SendRequest that returns the answer's body as a
// reader, and a notification handler per request.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// Limits of a client call.
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

// AnswerError is an answer to the call that came but cannot be read as
// its result: too large, not JSON, another request's, or a result that is
// not an object. Its text is Err's.
type AnswerError struct{ Err error }

func (e *AnswerError) Error() string { return e.Err.Error() }
func (e *AnswerError) Unwrap() error { return e.Err }

// ErrorAnswer is the downstream's JSON-RPC error answer to the call, as
// sent; its text is mcp-go's mapping of it (JSONRPCErrorDetails.AsError).
type ErrorAnswer struct{ Details mcp.JSONRPCErrorDetails }

func (e *ErrorAnswer) Error() string { return e.Details.AsError().Error() }

// ResumeError is a response stream that began, broke off before the
// answer and could not be reopened. Its text is Err's.
type ResumeError struct{ Err error }

func (e *ResumeError) Error() string { return e.Err.Error() }
func (e *ResumeError) Unwrap() error { return e.Err }

// ClientCall is one raw tools/call on a downstream's Streamable HTTP
// session. The fields are the session's; Do runs the call.
type ClientCall struct {
	URL       string
	Transport http.RoundTripper // the server's pooled transport
	Session   string            // Mcp-Session-Id, "" for none
	Version   string            // the protocol version the session negotiated
	// Fixed is SessionHeader(Session, Version), made once per session and
	// shared by its calls (nil: made per call).
	Fixed  http.Header
	Header http.Header // the session's outbound headers (they win, as in mcp-go's sendHTTP)
	ID     string      // the call's JSON-RPC id, a string
	Limit  int         // bytes of one message (the 64 MiB rule)
	// Notify takes a notification of the call's stream.
	Notify func(method string, params json.RawMessage)
	// Request answers a server-to-client request of the call's stream
	// (ctx is the call's, bounded by serverRequestTimeout); the answer is
	// POSTed back.
	Request func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error)
	// Debug logs what the call skipped or could not do; err is never a
	// credential (the caller scrubs it).
	Debug func(msg string, err error)
	// Stream: a JSON answer larger than StreamAbove comes back as a result
	// streamed from its body (RawResult.Streamed; the caller's
	// Call.Streams), which the caller copies out and closes.
	Stream bool

	handlers sync.WaitGroup // server-to-client requests being answered
}

// ToolCallRequest is the tools/call a ClientCall POSTs.
type ToolCallRequest struct {
	ID        string          // a string id
	Tool      string          // params.name
	Arguments json.RawMessage // an object as the caller sent it, or nil
	// Params are further members of params (a 2026-07-28 caller's
	// inputResponses and requestState, a task), written in key order.
	Params map[string]json.RawMessage
	// The _meta members: the progress token, the call span's W3C trace
	// context ("" for none), then Meta's in key order.
	ProgressToken, Traceparent, Tracestate string
	Meta                                   map[string]json.RawMessage
}

// Body is the request as JSON, written directly: the arguments and the
// caller's members go as they came (encoding/json would decode and
// re-encode them to put them in a struct).
func (r *ToolCallRequest) Body() []byte {
	b := make([]byte, 0, 128+len(r.ID)+len(r.Tool)+len(r.Arguments)+len(r.ProgressToken))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendQuote(b, r.ID)
	b = append(b, `,"method":"tools/call","params":`...)
	return append(r.appendParams(b), '}')
}

// ParamsJSON is the request's params object as JSON, as Body writes it
// (ID unused): the one encoding of a downstream tools/call, whichever path
// sends it.
func (r *ToolCallRequest) ParamsJSON() json.RawMessage {
	return r.appendParams(make([]byte, 0, 96+len(r.Tool)+len(r.Arguments)+len(r.ProgressToken)))
}

func (r *ToolCallRequest) appendParams(b []byte) []byte {
	b = appendString(append(b, `{"name":`...), r.Tool)
	if len(r.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, r.Arguments...)
	}
	var keys [8]string // the members' names, sorted: on the stack for a few
	for _, k := range sortedKeys(keys[:0], r.Params) {
		b = append(appendString(append(b, ','), k), ':')
		b = append(b, r.Params[k]...)
	}
	if r.ProgressToken != "" || r.Traceparent != "" || len(r.Meta) > 0 {
		b = append(b, `,"_meta":{`...)
		sep := false
		member := func(key string) {
			if sep {
				b = append(b, ',')
			}
			sep = true
			b = append(appendString(b, key), ':')
		}
		for _, m := range [...][2]string{{"progressToken", r.ProgressToken}, {tracing.KeyTraceparent, r.Traceparent}, {tracing.KeyTracestate, r.Tracestate}} {
			if m[1] != "" {
				member(m[0])
				b = appendString(b, m[1])
			}
		}
		for _, k := range sortedKeys(keys[:0], r.Meta) {
			member(k)
			b = append(b, r.Meta[k]...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// sortedKeys appends m's keys to keys, sorted.
func sortedKeys(keys []string, m map[string]json.RawMessage) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clientMessage is a JSON-RPC message from the downstream, decoded once
// with encoding/json to classify it: a response, a notification or a
// request. Its id, params and result stay as the downstream sent them; the
// result goes to the caller unchanged (RawResult).
type clientMessage struct {
	ID     json.RawMessage          `json:"id"`
	Method string                   `json:"method"`
	Params json.RawMessage          `json:"params"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

// Do POSTs body, the call's request, and returns its answer. cancel ends
// ctx; Do calls it before it returns (and before the answer's body is
// closed: on HTTP/2, Close can block on a stream that is still being
// written, and canceling is what ends it, as mcp-go does), then waits for
// the server-to-client requests it was answering.
func (c *ClientCall) Do(ctx context.Context, cancel context.CancelFunc, body []byte) (*RawResult, error) {
	defer c.handlers.Wait() // after cancel: a pending server-to-client request gives up
	req, err := c.newRequest(ctx, http.MethodPost, body, acceptAnswer)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.Transport.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", err))
	}
	kept := false // the body backs a streamed result, which releases it
	defer func() {
		if !kept {
			cancel() // first
			resp.Body.Close()
		}
	}()
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
		if c.Stream && (resp.ContentLength < 0 || resp.ContentLength > StreamAbove) {
			var res *RawResult
			if res, b, err = c.streamed(ctx, cancel, resp); res != nil {
				kept = true
				return res, nil
			}
			if ae := (*AnswerError)(nil); errors.As(err, &ae) {
				return nil, err
			}
		} else {
			b, err = ReadMessage(resp, c.Limit)
		}
		if errors.Is(err, ErrTooLarge) {
			return nil, &AnswerError{transport.NewError(err)}
		}
		if err != nil {
			return nil, transport.NewError(fmt.Errorf("failed to read response: %w", err))
		}
		return c.decodeAnswer(b)
	case "text/event-stream":
		return c.stream(ctx, resp.Body)
	}
	return nil, transport.NewError(fmt.Errorf("unexpected content type: %s", resp.Header.Get("Content-Type")))
}

// decodeAnswer decodes b, the downstream's application/json answer to the
// call, into its result or error.
func (c *ClientCall) decodeAnswer(b []byte) (*RawResult, error) {
	var msg clientMessage
	if !msg.readFast(b) {
		var err error
		if msg, err = decodeMessage(b); err != nil {
			return nil, &AnswerError{transport.NewError(fmt.Errorf("failed to decode response: %w", err))}
		}
	}
	if !c.answers(&msg) {
		return nil, &AnswerError{transport.NewError(fmt.Errorf("malformed response: not the answer to request %s: %.80s", c.ID, b))}
	}
	return answer(&msg)
}

// decodeMessage is b decoded with encoding/json (apart from decodeAnswer,
// whose message then stays off the heap).
func decodeMessage(b []byte) (clientMessage, error) {
	var msg clientMessage
	err := json.Unmarshal(b, &msg)
	return msg, err
}

// readFast reads b into msg as encoding/json does, with jsontext
// (jsonfast.go); false when b is not of the shapes it reads: a name
// escaped, not in ASCII or given twice, a method that is not a string or
// null, an error that is not null (decoded by its UnmarshalJSON).
func (msg *clientMessage) readFast(b []byte) bool {
	var method, errField json.RawMessage
	if !members(b, func(name, v []byte) bool {
		var field *json.RawMessage
		switch {
		case foldIs(name, "ID"):
			field = &msg.ID
		case foldIs(name, "METHOD"):
			field = &method
		case foldIs(name, "PARAMS"):
			field = &msg.Params
		case foldIs(name, "RESULT"):
			field = &msg.Result
		case foldIs(name, "ERROR"):
			if string(v) != "null" {
				return false
			}
			field = &errField
		default:
			return true
		}
		return set(field, v)
	}) {
		return false
	}
	if method != nil && string(method) != "null" {
		var ok bool
		if msg.Method, ok = rawString(method); !ok {
			return false
		}
	}
	return true
}

// The values of newRequest's fixed headers, shared by every request (net/http
// reads a request's header values and never writes them).
const acceptAnswer = "application/json, text/event-stream"

var (
	contentJSON       = []string{"application/json"}
	acceptAnswerValue = []string{acceptAnswer}
)

// SessionHeader is the header every request on a downstream session
// carries: its Mcp-Session-Id (none for "") and MCP-Protocol-Version.
func SessionHeader(session, version string) http.Header {
	h := http.Header{transport.HeaderKeyProtocolVersion: {version}}
	if session != "" {
		h[transport.HeaderKeySessionID] = []string{session}
	}
	return h
}

// newRequest is a request to the downstream session with mcp-go's headers:
// its own, then the session's outbound headers (which win, as in sendHTTP).
func (c *ClientCall) newRequest(ctx context.Context, method string, body []byte, accept string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL, rd)
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("failed to create request: %w", err))
	}
	h := req.Header
	if body != nil {
		h["Content-Type"] = contentJSON
	}
	switch accept {
	case acceptAnswer:
		h["Accept"] = acceptAnswerValue
	default:
		h["Accept"] = []string{accept}
	}
	fixed := c.Fixed
	if fixed == nil {
		fixed = SessionHeader(c.Session, c.Version)
	}
	for name, vals := range fixed {
		h[name] = vals
	}
	for name, vals := range c.Header {
		h[name] = vals
	}
	tracing.Inject(ctx, h) // the gateway's own: after the outbound set
	return req, nil
}

// streamed reads resp, an answer of unknown or large size, up to its
// result, and returns the result streamed from the rest of the body
// (res) when the answer is larger than StreamAbove: it closes with ctx,
// and its release cancels it and closes the body. A smaller answer, one
// without a result, or the error reading it, is returned to be taken as
// any other (b, err).
func (c *ClientCall) streamed(ctx context.Context, cancel context.CancelFunc, resp *http.Response) (res *RawResult, b []byte, err error) {
	if resp.ContentLength > int64(c.Limit) {
		return nil, nil, &TooLargeError{Limit: c.Limit}
	}
	p, err := ReadPieces(resp.Body, c.Limit, StreamAbove)
	if err != nil || !p.More {
		if err == nil {
			b = p.Bytes()
		}
		p.Free()
		return nil, b, err
	}
	readers := make([]io.Reader, 0, len(p.list)+1)
	for _, piece := range p.Slices() {
		readers = append(readers, bytes.NewReader(piece))
	}
	body, msg, err := openBody(io.MultiReader(append(readers, resp.Body)...), c.ID, int64(c.Limit))
	switch {
	case err != nil:
		p.Free()
		return nil, nil, &AnswerError{transport.NewError(fmt.Errorf("reading the answer: %w", err))}
	case msg != nil: // no result: an error answer, as any other
		p.Free()
		return nil, msg, nil
	}
	var once sync.Once
	body.abort = func() { once.Do(func() { cancel(); resp.Body.Close() }) }
	body.free = p.Free
	body.mu.Lock() // the function may run at once, and reads stop
	body.stop = context.AfterFunc(ctx, func() { body.close(errBodyUnread, false) })
	body.mu.Unlock()
	return &RawResult{body: body}, nil, nil
}

// refused is the error for an HTTP status other than 200 and 404: the
// JSON-RPC error in the body if there is one (a TypeScript SDK server's
// "No valid session ID" among them), else the status.
func refused(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	var msg clientMessage
	if json.Unmarshal(b, &msg) == nil && msg.Error != nil {
		return msg.Error.AsError()
	}
	return transport.NewError(fmt.Errorf("request failed with status %d: %s", resp.StatusCode, b))
}

// answers reports whether msg is the response to this call.
func (c *ClientCall) answers(msg *clientMessage) bool {
	if msg.Method != "" {
		return false
	}
	if string(msg.ID) == "null" {
		return c.ID == "" // encoding/json leaves the string empty
	}
	if len(msg.ID) >= 2 && msg.ID[0] == '"' && bytes.IndexByte(msg.ID, '\\') < 0 {
		return string(msg.ID[1:len(msg.ID)-1]) == c.ID // compared without a copy
	}
	id, ok := rawString(msg.ID)
	return ok && id == c.ID
}

// answer turns the call's response into its result or error.
func answer(msg *clientMessage) (*RawResult, error) {
	if msg.Error != nil {
		return nil, &ErrorAnswer{Details: *msg.Error}
	}
	res, err := PeekResult(msg.Result)
	if err != nil {
		return nil, &AnswerError{transport.NewError(err)}
	}
	return res, nil
}

// ErrNoResult is a response with neither a result nor an error.
var ErrNoResult = errors.New("malformed response: neither a result nor an error")

// PeekResult reads the members a caller acts on out of a result. A result
// that is not a JSON object is a malformed response.
func PeekResult(raw json.RawMessage) (*RawResult, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ErrNoResult
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("malformed response: the result is not an object: %.40s", raw)
	}
	rr := &RawResult{JSON: raw}
	if !Fast() || !peekFast(raw, &rr.IsError, &rr.ResultType, &rr.Meta) {
		var err error
		if rr.IsError, rr.ResultType, rr.Meta, err = peekSlow(raw); err != nil {
			return nil, err
		}
	}
	if string(rr.Meta) == "null" {
		rr.Meta = nil
	}
	return rr, nil
}

// peekSlow is PeekResult's read of raw with encoding/json.
func peekSlow(raw json.RawMessage) (isError bool, resultType string, meta json.RawMessage, err error) {
	var peek struct {
		IsError    bool            `json:"isError"`
		ResultType string          `json:"resultType"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &peek); err != nil {
		return false, "", nil, fmt.Errorf("malformed response: the result: %w", err)
	}
	return peek.IsError, peek.ResultType, peek.Meta, nil
}

// peekFast is PeekResult's read of raw, an object, with jsontext
// (jsonfast.go); false when it is not of the shapes it reads (a name
// escaped, not in ASCII or given twice; isError not a boolean or null;
// resultType not a string or null).
func peekFast(raw []byte, isError *bool, resultType *string, meta *json.RawMessage) bool {
	seen := 0
	return members(raw, func(name, v []byte) bool {
		var bit int
		switch {
		case foldIs(name, "ISERROR"):
			bit = 1
			switch string(v) {
			case "true":
				*isError = true
			case "false", "null":
			default:
				return false
			}
		case foldIs(name, "RESULTTYPE"):
			bit = 2
			if string(v) != "null" {
				var ok bool
				if *resultType, ok = rawString(v); !ok {
					return false
				}
			}
		case foldIs(name, "_META"):
			bit = 4
			*meta = v
		default:
			return true
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
}

// stream reads the call's SSE response until the answer, resuming the stream
// with its last event id when the server ended it before the answer.
func (c *ClientCall) stream(ctx context.Context, body io.Reader) (*RawResult, error) {
	cur := Cursor{Retry: -1}
	res, ended, err := c.readEvents(ctx, body, &cur)
	for res == nil && err == nil {
		if !ended || cur.LastID == "" {
			// mcp-go's "unexpected nil response": a lost connection.
			return nil, transport.NewError(fmt.Errorf("unexpected nil response: the stream ended before the answer: %w", io.ErrUnexpectedEOF))
		}
		res, ended, err = c.resumed(ctx, &cur)
	}
	return res, err
}

// resumed reopens the stream after cur and reads it. The call was
// delivered (its stream had begun): a failure to reopen may end the session
// but never sends the call again.
func (c *ClientCall) resumed(ctx context.Context, cur *Cursor) (*RawResult, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	body, err := c.resume(ctx, cur)
	if err != nil {
		cancel()
		return nil, false, &ResumeError{transport.NewError(fmt.Errorf("failed to resume the SSE stream for the response: %w", err))}
	}
	defer body.Close()
	defer cancel() // first, as in Do
	return c.readEvents(ctx, body, cur)
}

// resume waits the reconnection time and reopens the stream with a GET
// carrying Last-Event-ID.
func (c *ClientCall) resume(ctx context.Context, cur *Cursor) (io.ReadCloser, error) {
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
	resp, err := c.Transport.RoundTrip(req)
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
func (c *ClientCall) readEvents(ctx context.Context, body io.Reader, cur *Cursor) (res *RawResult, ended bool, err error) {
	events := NewEventReader(body, cur, c.Limit)
	for {
		data, err := events.Next()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, false, ctx.Err()
		case err == io.EOF:
			return nil, true, nil
		case errors.Is(err, ErrEventTooLarge) || errors.Is(err, ErrTooLarge):
			if errors.Is(err, ErrEventTooLarge) {
				err = &TooLargeError{Limit: c.Limit}
			}
			return nil, false, &AnswerError{transport.NewError(err)}
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
func (c *ClientCall) message(ctx context.Context, data []byte) (*RawResult, error) {
	var msg clientMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		c.Debug(fmt.Sprintf("downstream stream: a message that is not JSON-RPC, %d bytes (skipped)", len(data)), err)
		return nil, nil
	}
	switch {
	case msg.Method != "" && IsNull(msg.ID):
		c.Notify(msg.Method, msg.Params)
	case msg.Method != "":
		c.serverRequest(ctx, &msg)
	case c.answers(&msg):
		return answer(&msg)
	default:
		c.Debug("downstream stream: a response to another request (skipped)", nil)
	}
	return nil, nil
}

// serverRequest answers a server-to-client request of the call's stream on
// a goroutine of its own (the stream goes on meanwhile), with Request, and
// POSTs the answer back. ctx is the call's.
func (c *ClientCall) serverRequest(ctx context.Context, msg *clientMessage) {
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
		resp, err := c.Request(ctx, req)
		if err != nil || resp == nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, fmt.Sprint(err), nil)
		}
		// The answer goes out even when the call's context has ended (the
		// wait for the caller was cancelled): the downstream must not wait.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		if err := c.reply(rctx, resp); err != nil {
			c.Debug("answering a server-to-client request ("+req.Method+")", err)
		}
	})
}

// reply POSTs the answer to a server-to-client request.
func (c *ClientCall) reply(ctx context.Context, resp *transport.JSONRPCResponse) error {
	body, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	req, err := c.newRequest(ctx, http.MethodPost, body, acceptAnswer)
	if err != nil {
		return err
	}
	res, err := c.Transport.RoundTrip(req)
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
