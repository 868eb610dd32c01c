package wire

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Stream is the response of one fast-path tools/call (agents/proxy, fast.go):
// the call's notifications as SSE events while it runs, then the answer. It
// writes what mcp-go v1.2.1's handlePost writes for the same call, byte for
// byte: the first notification switches the response to text/event-stream
// (its three headers, status 200), each event is "event: message\ndata:
// <json>\n\n" in one Write and flushed, and the answer is the last event
// (see finish), or a JSON body when nothing switched the response.
//
// Delivery follows mcp-go's shape too, so that the relay's rules hold
// unchanged (agents/proxy, relay.go): notify never blocks the downstream transport's
// reader that calls it; it puts the notification in a buffer of 100 that one
// writer goroutine empties, and reports a full buffer as
// server.ErrNotificationChannelBlocked. Unlike mcp-go, the buffer and the
// goroutine exist only once a call sends a notification (most do not), and
// the answer is written only after every notification taken into the buffer:
// no flush barrier is needed.
type Stream struct {
	w       http.ResponseWriter
	flusher http.Flusher    // nil: the writer cannot stream; notifications are dropped, as mcp-go drops them
	reqCtx  context.Context // the HTTP request's: when it ends, nothing more is written
	modern  bool            // a 2026-07-28 caller: error answers carry their HTTP status
	id      any             // the call's JSON-RPC id

	open     sync.Once
	events   chan mcp.JSONRPCNotification // set by open; nil until a notification is sent
	kick     chan struct{}                // wakes the writer; set by open
	done     chan struct{}                // closed by finish: the writer exits; set by open
	closed   atomic.Bool                  // the answer is being written: notify refuses
	notified atomic.Bool

	mu       sync.Mutex // serialises writes to w
	upgraded bool       // the text/event-stream headers are written; guarded by mu
}

// ErrCallEnded: the call a notification or a server-to-client request was
// for has returned; its response stream is closed.
var ErrCallEnded = errors.New("the call has ended; its response stream is closed")

// notificationBuffer is mcp-go's per-request notification buffer size.
const notificationBuffer = 100

func newStream(w http.ResponseWriter, r *http.Request) *Stream {
	f, _ := w.(http.Flusher)
	s := &Stream{w: w, flusher: f, reqCtx: r.Context()}
	if rw, ok := w.(*Response); ok {
		rw.attach(s) // the endpoint's requests go through rw.Inject, ordered here
	}
	return s
}

// Notify queues one notification for the caller (a notifyFunc), built as
// mcp-go's SendNotificationToClient builds it.
func (s *Stream) Notify(method string, params map[string]any) error {
	return s.notify(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}})
}

// NotifyWithMeta is Notify, but params' "_meta" (a map) is sent as the
// notification's _meta, which Notify drops as mcp-go does (notify.go).
func (s *Stream) NotifyWithMeta(method string, params map[string]any) error {
	return s.notify(notificationOf(method, params))
}

// notify queues n.
func (s *Stream) notify(n mcp.JSONRPCNotification) error {
	if s.closed.Load() {
		return ErrCallEnded
	}
	s.open.Do(s.start)
	if s.events == nil { // finish won the race to open
		return ErrCallEnded
	}
	select {
	case s.events <- n:
	default:
		return server.ErrNotificationChannelBlocked
	}
	s.notified.Store(true)
	select {
	case s.kick <- struct{}{}:
	default: // the writer is awake already
	}
	return nil
}

// start makes the buffer and the writer goroutine, which ends with the
// answer (done) or with the request.
func (s *Stream) start() {
	s.mu.Lock() // inject reads events under mu, outside open
	s.events = make(chan mcp.JSONRPCNotification, notificationBuffer)
	s.kick = make(chan struct{}, 1)
	s.done = make(chan struct{})
	s.mu.Unlock()
	go func() {
		for {
			select {
			case <-s.kick:
				s.mu.Lock()
				if !s.closed.Load() { // else finish writes what is left, before the answer
					s.writeBuffered()
				}
				s.mu.Unlock()
			case <-s.done:
				return
			case <-s.reqCtx.Done():
				return
			}
		}
	}()
}

// writeBuffered writes the buffered notifications. Callers hold mu.
func (s *Stream) writeBuffered() {
	for {
		select {
		case n := <-s.events:
			if s.flusher != nil {
				s.writeEvent(n, true)
			}
		default:
			return
		}
	}
}

// writeEvent writes msg as one SSE event, switching the response to SSE
// first, and flushes it when told. Callers hold mu.
func (s *Stream) writeEvent(msg any, flush bool) {
	if !s.upgraded {
		s.upgrade()
	}
	var data []byte
	if raw, ok := msg.(RawAnswer); ok {
		data = oneLine(raw)
	} else {
		var err error
		if data, err = json.Marshal(msg); err != nil {
			return // mcp-go logs and skips such an event; the types here always marshal
		}
	}
	// One Write per event (the endpoint's response writer reads each
	// Write as one), built in a buffer of its size: fmt would grow one.
	_, _ = s.w.Write(AppendEvent(nil, data))
	if flush {
		s.flusher.Flush()
	}
}

// upgrade switches the response to SSE. Callers hold mu.
func (s *Stream) upgrade() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.upgraded = true
}

// ordered runs inject, the write of a server-to-client request of the
// endpoint's own (Response.Inject), as the next event: after the
// notifications taken so far, never after the answer. The response is SSE
// from then on.
func (s *Stream) ordered(inject func() error) error {
	if s.flusher == nil {
		return errors.New("the response to the caller's request cannot stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrCallEnded
	}
	if s.events != nil {
		s.writeBuffered()
	}
	if err := inject(); err != nil {
		return err
	}
	s.upgraded = true // Inject opened the response as SSE, if nothing had
	return nil
}

// finish writes the notifications still buffered, then answer (a JSON-RPC
// response or error, or a BodyAnswer), unless the caller has gone away.
// After it returns nothing touches the response writer.
func (s *Stream) finish(answer any) {
	s.closed.Store(true)
	s.open.Do(func() {}) // after this, events is set for good or never will be
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events != nil {
		s.writeBuffered()
		close(s.done)
	}
	if ba, ok := answer.(*BodyAnswer); ok {
		s.finishBody(ba)
		return
	}
	if s.reqCtx.Err() != nil {
		return
	}
	rf, refused := answer.(Refusal)
	if refused {
		answer = rf.JSONRPCError
	}
	if s.flusher != nil && (s.upgraded || s.notified.Load()) {
		// mcp-go flushes the answer event, so that the response is chunked
		// even when nothing came before it. Declaring the chunked framing
		// up front gives the caller the same response with one write
		// instead of two: the answer is the handler's last write, and
		// net/http sends it together with the end of the response.
		if !s.upgraded {
			s.w.Header().Set("Transfer-Encoding", "chunked")
		}
		s.writeEvent(answer, false)
		return
	}
	// mcp-go maps JSON-RPC error codes to HTTP statuses for 2026-07-28
	// callers; a tools/call handler's errors are internal errors (-32603),
	// which map to 200, but for the ones answered as they are (CallerError,
	// a missing client capability: -32021 is 400).
	status := http.StatusOK
	if e, ok := answer.(mcp.JSONRPCError); ok && s.modern {
		status = HTTPStatus(e.Error.Code)
	}
	if refused {
		status = rf.Status
		if rf.RetryAfter > 0 {
			s.w.Header().Set("Retry-After", strconv.Itoa(int(rf.RetryAfter.Round(time.Second).Seconds())))
		}
	}
	s.w.Header().Set("Content-Type", "application/json")
	s.w.WriteHeader(status)
	if raw, ok := answer.(RawAnswer); ok {
		_, _ = s.w.Write(append(raw, '\n')) // as Encode ends a message
		return
	}
	_ = json.NewEncoder(s.w).Encode(answer)
}

// finishBody writes a, a result still in the downstream's body, as the
// call's answer, copied as it is read (body.go), and closes it: an SSE
// event when the response is a stream already, else a JSON body. A copy
// that fails after it began aborts the response, so that the caller's
// client sees a failed response, not a complete one that ends early.
// Callers hold mu.
func (s *Stream) finishBody(a *BodyAnswer) {
	if s.reqCtx.Err() != nil {
		a.Result.Close()
		return
	}
	sse := s.flusher != nil && (s.upgraded || s.notified.Load())
	w, err := newPassWriter(s.w, s.reqCtx, s.id, s.modern, sse, a.Self)
	if err != nil {
		a.Result.Close()
		return // not reached: the id was decoded from JSON
	}
	if sse {
		if !s.upgraded {
			s.upgrade()
		}
	} else {
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
	}
	if err := a.Result.copyOut(w); err != nil {
		panic(http.ErrAbortHandler)
	}
}
