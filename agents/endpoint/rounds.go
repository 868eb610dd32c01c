package endpoint

// What a target of the input-required bridge (inputbridge.go) tells it from
// inside a call, and asks of it. A proxy's call needs none of this: a
// replay calls the one downstream tool again. An llm agent's tool loop
// does: a replay from the start would run the model turns already done
// again, and the tool calls they made, so it records a checkpoint before
// each turn's tool calls (the conversation so far, and each tool result as
// it comes), and a replica without the waiting call continues from there.

import (
	"context"
	"encoding/json"
)

// WithAskScope returns ctx whose downstream requests to the caller are
// keyed under scope (the key is scope + "elicitation-1", …): the tool call
// of a loop they come from, so that a replay of that call alone finds its
// answers.
func WithAskScope(ctx context.Context, scope string) context.Context {
	if ScopeFrom(ctx).call == nil {
		return ctx
	}
	return withScope(ctx, func(s *Scope) { s.askScope = scope })
}

// SetCheckpoint makes fn the call's checkpoint: when the call next asks
// its caller for input, fn's JSON goes into the sealed requestState
// (bounded by maxCheckpoint), and a replica that gets the retry without
// holding the call runs the target again with it (TakeResume) instead of
// from the start. With fresh, the answers the caller gave so far are
// forgotten: they belong to steps the checkpoint holds the results of. It
// reports false when the call of ctx is not bridged (fn is then never
// called).
func SetCheckpoint(ctx context.Context, fresh bool, fn func() json.RawMessage) bool {
	c := ScopeFrom(ctx).call
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkpoint = fn
	if fresh {
		c.seq, c.prior, c.replay = nil, nil, nil
	}
	return true
}

// TakeResume returns, once, the checkpoint the call of ctx continues from:
// nil when it starts afresh.
func TakeResume(ctx context.Context) json.RawMessage {
	c := ScopeFrom(ctx).call
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resume
	c.resume = nil
	return r
}

// Unanswered reports whether a request the call of ctx sent its caller
// ended without an answer (the caller never retried, or not in time): the
// call's answer will never be read, and a target with more to do (another
// model turn) should stop. Asked once every downstream call it made has
// returned, a request still waiting counts: the downstream call it was
// for has given up on it, whether or not its wait has seen that yet.
func Unanswered(ctx context.Context) bool {
	c := ScopeFrom(ctx).call
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unanswered || len(c.asks) > 0
}
