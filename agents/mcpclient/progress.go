package mcpclient

import (
	"strconv"
	"sync"
)

// progressRouter routes downstream notifications/progress to the call that
// asked for them. mcp-go has one notification handler per client and a
// stateful downstream may put one call's progress on another call's stream
// (or on the GET stream), so every call gets a fresh token, unique within
// the Manager, and notifications are matched by token alone.
type progressRouter struct {
	mu    sync.Mutex
	seq   uint64
	calls map[string]*progressSink // guarded by mu
}

// progressSink guards one call's callback so that it never runs after the
// call has returned.
type progressSink struct {
	mu   sync.Mutex
	fn   ProgressFunc
	done bool
}

// register returns a new token routed to fn and the function that
// unregisters it; after that returns, fn is not called again.
func (r *progressRouter) register(fn ProgressFunc) (token string, unregister func()) {
	sink := &progressSink{fn: fn}
	r.mu.Lock()
	r.seq++
	token = "pgw-" + strconv.FormatUint(r.seq, 36)
	r.calls[token] = sink
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.calls, token)
		r.mu.Unlock()
		sink.mu.Lock()
		sink.done = true
		sink.mu.Unlock()
	}
}

// deliver hands the params of one notifications/progress to its call, if
// the call is still running. Unknown tokens are dropped.
func (r *progressRouter) deliver(params map[string]any) {
	token, ok := params["progressToken"].(string)
	if !ok {
		return
	}
	r.mu.Lock()
	sink := r.calls[token]
	r.mu.Unlock()
	if sink == nil {
		return
	}
	progress, _ := params["progress"].(float64)
	var total *float64
	if t, ok := params["total"].(float64); ok {
		total = &t
	}
	message, _ := params["message"].(string)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.done {
		sink.fn(progress, total, message)
	}
}
