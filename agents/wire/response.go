package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
)

// The response writer of one agent request (Response): what mcp-go's
// StreamableHTTPServer writes to through Handle (it is a
// server.HTTPResponseWriter), what the fast path's Stream writes to, and
// what the endpoint sends its own server-to-client requests through
// (Inject). It observes what mcp-go writes (the SSE events, for the
// endpoint's count) and changes one thing, the message of an error answer
// (withRequestID, the one documented exception). It never reframes: a
// call whose answer must be a stream because the endpoint injects a
// request has its mcp-go session upgraded to SSE before the first
// injection (endpoint.Request: UpgradeToSSEWhenReceiveNotification), so
// mcp-go writes its answer as an SSE event itself. Gap: mcp-go v1.2.1
// sends a request of the server's own on a call's response stream for
// elicitation only, and routes its answer by session id alone. Buys:
// correctness (the relays of elicitation, sampling and roots on mcp-go's
// calls; errors a caller can match to the gateway's log), not speed.
// Retired by: an mcp-go API to send a request on a call's response stream
// (and withRequestID's own, below).
//
// What it relies on of mcp-go, and must be checked on an upgrade: an SSE
// event is one Write (writeSSEEvent, as AppendEvent), a JSON answer is one
// json.Encoder write (writeJSONRPCMessage, handlePost's final encode), and
// a session upgraded to SSE answers as an event (handlePost's
// upgradeToSSE). Every answer mcp-go would write as text/plain is answered
// before mcp-go sees the request (Refuse, the gateway's checks), so this
// writer never sees one (docs/architecture.md).

// ErrNotStreaming is Inject's error when the response went out as JSON
// already: nothing more can be sent on it.
var ErrNotStreaming = errors.New("the response to the caller's request is not an SSE stream")

// Response wraps an agent request's http.ResponseWriter: it sets the
// streaming headers of an SSE answer (X-Accel-Buffering: no, so that nginx
// streams it), counts the SSE events written (Events), adds the request
// id to the message of a JSON-RPC error answer (withRequestID), and lets
// the endpoint inject a request of its own (Inject).
type Response struct {
	http.ResponseWriter
	rid    string // the request id
	events Events // told of each SSE event written; nil: none

	mu          sync.Mutex // serializes writes: mcp-go's and Inject's
	stream      *Stream    // the fast path's call writing to this response (attach), or nil
	wroteHeader bool
	upgraded    bool // Inject sent the SSE headers
	bodyWrites  int  // writes of a JSON body so far
}

// Events is told of each SSE event a Response writes, after it is written.
type Events interface{ Wrote() }

// Events is what w tells of its events (NewResponse), or nil.
func (w *Response) Events() Events { return w.events }

// NewResponse wraps w for the request with requestID; events (nil: none)
// is told of each SSE event written.
func NewResponse(w http.ResponseWriter, requestID string, events Events) *Response {
	return &Response{ResponseWriter: w, rid: requestID, events: events}
}

func (w *Response) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *Response) writeHeaderLocked(code int) {
	if w.upgraded {
		// mcp-go (its session upgraded to SSE) or the fast path's stream
		// starting its answer on a stream Inject opened: the status and
		// the SSE headers went out.
		return
	}
	if !w.wroteHeader {
		w.wroteHeader = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.Header().Set("X-Accel-Buffering", "no")
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Response) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	out := p
	if msg, ok := EventData(p); ok {
		if with := withRequestID(msg, w.rid); len(with) != len(msg) {
			out = AppendEvent(nil, with)
		}
	} else if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		// An error answer is one write (json.Encoder's); a later write is
		// a piece of a large streamed answer (body.go).
		if w.bodyWrites++; w.bodyWrites == 1 {
			out = withRequestID(p, w.rid)
		}
	}
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	if IsEvent(p) && w.events != nil {
		w.events.Wrote()
	}
	return len(p), nil
}

// Flush makes the wrapper an http.Flusher, as mcp-go requires for SSE.
func (w *Response) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *Response) flushLocked() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// CanStream reports whether Flush delivers at once (server.HTTPResponseWriter).
func (w *Response) CanStream() bool {
	_, ok := w.ResponseWriter.(http.Flusher)
	return ok
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *Response) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Inject is the one way to write a request of the endpoint's own (one
// JSON-RPC message) on a call's response: as an SSE event, flushed,
// opening the response as SSE (mcp-go's headers, and X-Accel-Buffering)
// if nothing was written yet. On the fast path's call (a Stream writing to
// w) the Stream orders it: after the notifications it took, never after
// the answer (Stream.ordered). On mcp-go's, the caller has upgraded the
// call's session to SSE (so that mcp-go answers as an event) and makes
// sure mcp-go is not touching the response meanwhile (no notification of
// the request is on its way: proxy.Relay.Exclusive).
func (w *Response) Inject(msg []byte) error {
	w.mu.Lock()
	s := w.stream
	w.mu.Unlock()
	if s != nil {
		return s.ordered(func() error { return w.inject(msg) })
	}
	return w.inject(msg)
}

// inject writes msg as Inject says.
func (w *Response) inject(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.ResponseWriter.WriteHeader(http.StatusOK)
		w.wroteHeader, w.upgraded = true, true
	} else if !w.upgraded && !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return ErrNotStreaming
	}
	if err := w.writeEventLocked(msg); err != nil {
		return err
	}
	w.flushLocked()
	return nil
}

// FastCall reports that a fast-path call (Serve) writes w's answer: its
// stream orders an Inject after the notifications it took, never after
// the answer.
func (w *Response) FastCall() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream != nil
}

// attach records s, the fast path's call, as the writer of w's answer
// (Inject).
func (w *Response) attach(s *Stream) {
	w.mu.Lock()
	w.stream = s
	w.mu.Unlock()
}

// writeEventLocked writes data as one SSE message event, in one write, and
// counts it.
func (w *Response) writeEventLocked(data []byte) error {
	_, err := w.ResponseWriter.Write(AppendEvent(nil, data))
	if err == nil && w.events != nil {
		w.events.Wrote()
	}
	return err
}

// withRequestID returns msg, one JSON-RPC message as mcp-go or the fast
// path wrote it, with " (request id R)" added to the message of an error
// response (STYLE: errors that reach a client carry the request id that is
// also in the log line; mcp-go's "Method x not found" has none). Anything
// else comes back as it is: a result, an error whose message names a
// request id already, a write that is not one whole JSON value. The
// answer is written in mcp-go's member order, values as they were.
//
// It is the one place the gateway rewrites what mcp-go wrote, and the
// documented exception to observing it: mcp-go v1.2.1 has no hook to
// change an error answer's message (its handlePost builds and encodes the
// error itself), and STYLE requires the id. Retired by: such a hook in
// mcp-go (an error-message function on StreamableHTTPServer, or its
// errors built through a server option), after which Response only
// observes.
func withRequestID(msg []byte, rid string) []byte {
	// Cheap tests first: a result (which may well mention "error") is
	// passed before the whole write is checked to be JSON.
	if rid == "" || !bytes.Contains(msg, []byte(`"error"`)) || bytes.Contains(msg, []byte(`"result"`)) || !json.Valid(msg) {
		return msg
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(msg, &members) != nil || len(members) != 3 {
		return msg
	}
	jsonrpc, id, rpcErr := members["jsonrpc"], members["id"], members["error"]
	var e map[string]json.RawMessage
	if jsonrpc == nil || id == nil || json.Unmarshal(rpcErr, &e) != nil || e == nil {
		return msg
	}
	code, message, data := e["code"], e["message"], e["data"]
	withData := 0
	if data != nil {
		withData = 1
	}
	var text string
	if code == nil || len(e) != 2+withData || json.Unmarshal(message, &text) != nil ||
		message[0] != '"' || strings.Contains(text, "request id") {
		return msg
	}
	quoted, err := json.Marshal(text + " (request id " + rid + ")")
	if err != nil {
		return msg
	}
	out := make([]byte, 0, len(msg)+len(rid)+32)
	out = append(append(append(out, `{"jsonrpc":`...), jsonrpc...), `,"id":`...)
	out = append(append(out, id...), `,"error":{"code":`...)
	out = append(append(append(out, code...), `,"message":`...), quoted...)
	if data != nil {
		out = append(append(out, `,"data":`...), data...)
	}
	out = append(out, "}}"...)
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}
