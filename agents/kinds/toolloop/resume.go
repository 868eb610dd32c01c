package toolloop

// The llm tool loop's checkpoint for MCP 2026-07-28 input-required rounds
// (agents/bridge), kept in the call's round-trip state (Call.Rounds). When
// a downstream tool that the loop calls asks the caller for input
// (elicitation, sampling, roots), the caller gets an InputRequiredResult whose sealed requestState carries this
// checkpoint: the conversation up to the model turn whose tool calls are
// running (the assistant message with those calls last), the turn's
// number, and the results of the turn's tool calls that have finished. The
// retry finishes the call on any replica:
//
//   - on the replica that asked, the loop is still running, waiting for the
//     answers; they are handed to the waiting downstream request and the
//     loop goes on (no tool and no model turn runs twice);
//   - on another replica (or after the waiting call ended), the loop starts
//     from the checkpoint: it runs again only the turn's tool calls that
//     had not finished, their downstream requests answered from the
//     retry's inputResponses (matched by key: the tool call's position and
//     the request's kind and number, then by params digest), and then calls
//     the model with their results as it would have. The model turns
//     already done are not run again.
//
// Only a top-level llm run keeps a checkpoint. A sub-agent's requests are
// keyed under the parent's tool call that runs it, and a replay runs that
// tool call (the sub-agent) again. The workflows' checkpoints are
// agents/kinds/workflow's (resume.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// resumeOf is the checkpoint a top-level run continues from (nil: it
// starts afresh).
func resumeOf(ctx context.Context, c *Call) (*checkpoint, error) {
	if c.Depth > 0 {
		return nil, nil
	}
	raw := c.TakeResume()
	if raw == nil {
		return nil, nil
	}
	return parseCheckpoint(raw)
}

// checkpointTurn records turn i of a top-level run (msgs through its
// assistant message, done: its tool results from an earlier round) as the
// call's checkpoint, and returns it for the tool calls to record their
// results in; nil when the call is not an input-required one. again: the
// turn is the one a retry continues, whose answers so far still count.
func checkpointTurn(ctx context.Context, c *Call, i int, msgs []llm.Message, done map[int]llm.Message, again bool) *turnCheckpoint {
	if c.Depth > 0 {
		return nil
	}
	cp := newTurnCheckpoint(i, msgs, done)
	if !c.SetCheckpoint(!again, cp.snapshot) {
		return nil
	}
	return cp
}

// checkpoint is what the loop continues from.
type checkpoint struct {
	Iter int                 `json:"iter"` // the model turn whose tool calls run
	Msgs []llm.Message       `json:"msgs"` // through that turn's assistant message
	Done map[int]llm.Message `json:"done,omitempty"`
}

// turnCheckpoint is the checkpoint of the turn running now; tool calls
// record their results in it as they finish.
type turnCheckpoint struct {
	mu sync.Mutex
	cp checkpoint
}

func newTurnCheckpoint(iter int, msgs []llm.Message, done map[int]llm.Message) *turnCheckpoint {
	t := &turnCheckpoint{cp: checkpoint{Iter: iter, Msgs: msgs}}
	for i, m := range done {
		t.finished(i, m)
	}
	return t
}

// finished records tool call i's result.
func (t *turnCheckpoint) finished(i int, m llm.Message) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.cp.Done == nil {
		t.cp.Done = map[int]llm.Message{}
	}
	t.cp.Done[i] = m
	t.mu.Unlock()
}

// snapshot is the checkpoint as JSON (Call.SetCheckpoint).
func (t *turnCheckpoint) snapshot() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, _ := json.Marshal(t.cp) // strings, bytes, raw JSON: always encodes
	return b
}

// parseCheckpoint reads the checkpoint a retry brings (sealed by this
// gateway, so only its shape is checked).
func parseCheckpoint(raw json.RawMessage) (*checkpoint, error) {
	var cp checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		return nil, fmt.Errorf("the requestState's conversation: %w", err)
	}
	if n := len(cp.Msgs); n == 0 || cp.Msgs[n-1].Role != llm.RoleAssistant || len(cp.Msgs[n-1].ToolCalls) == 0 || cp.Iter < 1 {
		return nil, fmt.Errorf("the requestState's conversation does not end with tool calls this agent can run")
	}
	return &cp, nil
}
