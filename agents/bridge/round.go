package bridge

// What a target of the bridge is handed of its call (wire.Call.Rounds), to
// tell the bridge from inside the call and ask of it. A proxy's call needs
// only Ask: a replay calls the one downstream tool again. An llm agent's
// tool loop needs more: a replay from the start would run the model turns
// already done again, and the tool calls they made, so it records a
// checkpoint before each turn's tool calls (the conversation so far, and
// each tool result as it comes), and a replica without the waiting call
// continues from there.

import (
	"context"
	"encoding/json"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// round is a bridged call's round-trip state as its target sees it: the
// call, and the key prefix of the asks made through it (Scoped).
type round struct {
	c     *inputCall
	scope string
}

var _ wire.Rounds = round{}

// Ask sends the caller the downstream's request (method, params) and
// returns the caller's answer, given in a later round.
func (r round) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return r.c.ask(ctx, r.scope, method, params)
}

// Scoped is r whose asks are keyed under scope (the key is scope +
// "elicitation-1", …): the tool call of a loop or the step of a workflow
// they come from, so that a replay of that call alone finds its answers.
func (r round) Scoped(scope string) wire.Rounds { return round{c: r.c, scope: scope} }

// SetCheckpoint makes fn the call's checkpoint: when the call next asks
// its caller for input, fn's JSON goes into the sealed requestState
// (bounded by maxCheckpoint), and a replica that gets the retry without
// holding the call runs the target again with it (TakeResume) instead of
// from the start. With fresh, the answers the caller gave so far are
// forgotten: they belong to steps the checkpoint holds the results of. It
// reports true: the call is bridged.
func (r round) SetCheckpoint(fresh bool, fn func() json.RawMessage) bool {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkpoint = fn
	if fresh {
		c.seq, c.prior, c.replay = nil, nil, nil
	}
	return true
}

// TakeResume returns, once, the checkpoint the call continues from: nil
// when it starts afresh.
func (r round) TakeResume() json.RawMessage {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.resume
	c.resume = nil
	return res
}

// Unanswered reports whether a request the call sent its caller ended
// without an answer (the caller never retried, or not in time): the call's
// answer will never be read, and a target with more to do (another model
// turn) should stop. Asked once every downstream call it made has
// returned, a request still waiting counts: the downstream call it was for
// has given up on it, whether or not its wait has seen that yet.
func (r round) Unanswered() bool {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unanswered || len(c.asks) > 0
}
