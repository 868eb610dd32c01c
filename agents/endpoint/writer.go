package endpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// trackingWriter counts SSE events (mcp-go writes each as one write:
// wire.IsEvent) and sets the streaming headers. It also lets
// the agent write a server-to-client request of its own onto the response
// (inject), which mcp-go (v1.2.1) offers for elicitation only: writes are
// serialized, and when the injected event is the response's first, the
// writer upgrades it to SSE itself and re-frames the JSON answer mcp-go
// writes at the end (it does not know the stream was upgraded) as the
// stream's last event. A JSON-RPC error response gets the request id in
// its message (withRequestID), as the gateway's own errors have it, and a
// plain-text error mcp-go writes (plainError) becomes a JSON-RPC error.
type trackingWriter struct {
	http.ResponseWriter
	t     *StreamTracker
	rid   string          // the request id
	msgID json.RawMessage // the JSON-RPC id of the request, or null

	mu          sync.Mutex // serializes writes: mcp-go's and inject's
	wroteHeader bool
	upgraded    bool // inject sent the SSE headers
	reframe     bool // after upgraded: mcp-go then began a JSON answer
	plainError  int  // the status of a text/plain error answer being rewritten, else 0
	bodyWrites  int  // writes of a JSON body so far
}

func (w *trackingWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *trackingWriter) writeHeaderLocked(code int) {
	if w.upgraded {
		// mcp-go starting its own answer on a stream inject already
		// opened: the status went out; a JSON answer becomes an event.
		w.reframe = strings.HasPrefix(w.Header().Get("Content-Type"), "application/json")
		return
	}
	if !w.wroteHeader {
		w.wroteHeader = true
		if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
			w.plainError = code
			w.Header().Set("Content-Type", "application/json")
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.Header().Set("X-Accel-Buffering", "no")
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		w.writeHeaderLocked(http.StatusOK)
	}
	if w.plainError != 0 {
		return w.writePlainErrorLocked(p)
	}
	if w.reframe {
		// json.Encoder writes the whole answer, newline-terminated, at once.
		if _, err := w.writeEventLocked(withRequestID(bytes.TrimRight(p, "\n"), w.rid)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	out := p
	if msg, ok := wire.EventData(p); ok {
		if with := withRequestID(msg, w.rid); len(with) != len(msg) {
			out = wire.AppendEvent(nil, with)
		}
	} else if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		// An error answer is one write (json.Encoder's); a later write is
		// a piece of a large answer passed through (wire, passthrough.go).
		if w.bodyWrites++; w.bodyWrites == 1 {
			out = withRequestID(p, w.rid)
		}
	}
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	if wire.IsEvent(p) {
		w.t.wrote(1)
	}
	return len(p), nil
}

// writePlainErrorLocked writes p, the text of an error mcp-go answers as
// text/plain (v1.2.1 writeHTTPError: an unknown protocol version on a
// DELETE, GET and DELETE of the 2026-07-28 protocol, session errors), as a
// JSON-RPC error with the request's id and the request id in its message:
// every error body an MCP client gets is JSON-RPC. mcp-go writes such a
// text in one write; a further write is dropped.
func (w *trackingWriter) writePlainErrorLocked(p []byte) (int, error) {
	if w.plainError < 0 {
		return len(p), nil
	}
	code := -32600 // invalid request
	if w.plainError >= 500 {
		code = -32603 // internal error
	}
	text := strings.TrimSpace(string(p))
	if w.rid != "" {
		text += " (request id " + w.rid + ")"
	}
	out := wire.ErrorJSON(w.msgID, code, text, nil)
	w.plainError = -1
	if _, err := w.ResponseWriter.Write(append(out, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}

var jsonNull = json.RawMessage("null")

// withRequestID returns msg, one JSON-RPC message as mcp-go or the fast
// path wrote it, with " (request id R)" added to the message of an error
// response (STYLE: errors that reach a client carry the request id that is
// also in the log line; mcp-go's "Method x not found" has none). Anything
// else comes back as it is: a result, an error whose message names a
// request id already, a write that is not one whole JSON value. The
// answer is written in mcp-go's member order, values as they were.
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
	var text string
	if code == nil || len(e) != 2+btoi(data != nil) || json.Unmarshal(message, &text) != nil ||
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

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Flush makes the wrapper an http.Flusher, as mcp-go requires for SSE.
func (w *trackingWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *trackingWriter) flushLocked() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// errNotStreaming: the response went out as JSON already, so nothing more
// can be sent on it.
var errNotStreaming = errors.New("the response to the caller's request is not an SSE stream")

// inject writes msg (one JSON-RPC message) as an SSE event and flushes it,
// upgrading the response to SSE if nothing was written yet. The caller
// makes sure mcp-go is not touching the response headers meanwhile (no
// notification of the request is on its way: proxy.Relay.Exclusive).
func (w *trackingWriter) inject(msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.wroteHeader {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.ResponseWriter.WriteHeader(http.StatusOK)
		w.wroteHeader, w.upgraded = true, true
	} else if !w.upgraded && !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return errNotStreaming
	}
	if _, err := w.writeEventLocked(msg); err != nil {
		return err
	}
	w.flushLocked()
	return nil
}

// writeEventLocked writes data as one SSE message event, in one write, and
// counts it.
func (w *trackingWriter) writeEventLocked(data []byte) (int, error) {
	n, err := w.ResponseWriter.Write(wire.AppendEvent(nil, data))
	if err == nil {
		w.t.wrote(1)
	}
	return n, err
}
