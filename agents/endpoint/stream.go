package endpoint

// The response of one agent request, tracked: how many SSE events were
// written to it, and the writer (wire.Response) the endpoint injects its
// own requests through.

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// StreamTracker counts the SSE events written to one HTTP response; the
// gateway installs it per agent request with TrackStream.
type StreamTracker struct {
	w     *wire.Response // the response the events go to
	state *requestState  // ServeHTTP's, for a POST it decoded (before any handler runs); or nil

	mu     sync.Mutex
	events int
	wake   chan struct{} // closed at the next event; made by the first waiter (nil: none waits)
}

var _ wire.Sink = (*StreamTracker)(nil)

// TrackStream wraps w so that the agent can wait for its notifications to
// be written (the call's wire.Call.Sink), marks SSE responses with
// X-Accel-Buffering: no so that nginx streams them, and adds requestID to
// the message of a JSON-RPC error answer (wire.Response). The endpoint
// finds the tracker through the writer (trackerOf) and puts it in the
// request's scope itself, with the rest it adds: one copy of the request.
func TrackStream(w http.ResponseWriter, r *http.Request, requestID string) (http.ResponseWriter, *http.Request) {
	t := &StreamTracker{}
	t.w = wire.NewResponse(w, requestID, t)
	return t.w, r
}

// trackerOf is the tracker of a writer TrackStream made, or nil.
func trackerOf(w http.ResponseWriter) *StreamTracker {
	if rw, ok := w.(*wire.Response); ok {
		t, _ := rw.Events().(*StreamTracker)
		return t
	}
	return nil
}

// Wrote counts one event written (wire.Events).
func (t *StreamTracker) Wrote() {
	t.mu.Lock()
	t.events++
	if t.wake != nil {
		close(t.wake)
		t.wake = nil
	}
	t.mu.Unlock()
}

// Events is the number of events written to the response so far.
func (t *StreamTracker) Events() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events
}

// WaitEvents waits until n events have been written, ctx ends or timeout
// passes.
func (t *StreamTracker) WaitEvents(ctx context.Context, n int, timeout time.Duration) {
	var timer *time.Timer // made once there is something to wait for
	for {
		t.mu.Lock()
		done := t.events >= n
		if !done && t.wake == nil {
			t.wake = make(chan struct{})
		}
		wake := t.wake
		t.mu.Unlock()
		if done {
			return
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}
