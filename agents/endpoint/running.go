package endpoint

// The running calls of session-based callers, by "<agent>\x00<session>:<id>",
// so that a notifications/cancelled reaches a fast call, which mcp-go does
// not know of, and a call that started before a reload (endpoint.go).

import (
	"context"
	"sync"
)

// runningCall is one tracked call of a session-based caller.
type runningCall struct {
	cancel context.CancelFunc // a fast call's; nil for a call mcp-go serves
	owner  *Endpoint          // the endpoint (so the snapshot) serving it

	table *runningCalls // where it is tracked (track), under key
	key   string
}

// Untrack removes c from the table it was tracked in (wire.Untracker).
func (c *runningCall) Untrack() {
	t := c.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls[c.key] == c {
		delete(t.calls, c.key)
	}
}

// maxRunning bounds the tracked calls: past it, calls are not tracked (a
// cancel then reaches only what mcp-go knows of). Entries live only while
// their call runs.
const maxRunning = 10000

// runningCalls is the table of tracked calls.
type runningCalls struct {
	mu    sync.Mutex
	calls map[string]*runningCall // guarded by mu
}

func (t *runningCalls) init() { t.calls = map[string]*runningCall{} }

// track records a running call under key and returns it, to be
// untracked (runningCall.Untrack); nil when the key is taken or the table
// full.
func (t *runningCalls) track(key string, call *runningCall) *runningCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, taken := t.calls[key]; taken || len(t.calls) >= maxRunning {
		return nil
	}
	call.table, call.key = t, key
	t.calls[key] = call
	return call
}

// remove takes the call tracked under key out of the table and returns it
// (nil if none).
func (t *runningCalls) remove(key string) *runningCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	call := t.calls[key]
	delete(t.calls, key)
	return call
}
