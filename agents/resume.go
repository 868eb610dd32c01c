package agents

// The llm tool loop's checkpoint for MCP 2026-07-28 input-required rounds
// (agents/bridge), kept in the call's round-trip state (Call.Rounds). When a downstream tool that the loop
// calls asks the caller for input (elicitation, sampling, roots), the
// caller gets an InputRequiredResult whose sealed requestState carries this
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
// tool call (the sub-agent) again.

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
	raw := c.takeResume()
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
	if !c.setCheckpoint(!again, cp.snapshot) {
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

// snapshot is the checkpoint as JSON (wire.Rounds.SetCheckpoint).
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

// The workflows' checkpoints (chain, router, parallel,
// evaluator_optimizer, orchestrator). A workflow runs other agents; when one of them has
// a downstream ask the caller for input, the state carries what the
// workflow has done so far, and a replica without the waiting call
// continues from there: a chain from the step that asked, with that step's
// input; a router with the agent it chose (the model is not asked again);
// a parallel run with the fan_out answers it has, running only the agents
// still missing, then fan_in; an evaluator_optimizer in the round and at
// the step (generator or evaluator) that asked, with the drafts it has;
// an orchestrator with its plan and the results of its finished steps.
// The step that asked runs again on that replica (a sub-agent is replayed
// as a whole, its requests answered from the retry), none before it.

// stepCheckpoint is a workflow's checkpoint.
type stepCheckpoint struct {
	Kind  string              `json:"kind"`            // the workflow's kind, checked on resume
	Step  int                 `json:"step,omitempty"`  // chain: the step (0-based) that runs
	Input string              `json:"input,omitempty"` // chain: its input
	Route string              `json:"route,omitempty"` // router: the agent chosen
	Done  map[int]stepOutcome `json:"done,omitempty"`  // parallel: fan_out answers so far, by position
	Eval  *evalProgress       `json:"eval,omitempty"`  // evaluator_optimizer
	Orch  *orchProgress       `json:"orch,omitempty"`  // orchestrator
	mu    sync.Mutex          // guards Done while fan_out agents finish
}

// evalProgress is where an evaluator_optimizer run is: the round, the
// progress step counter before the step that runs, the generator's input
// (the request or a refinement request), the draft when the generator has
// answered and the evaluator runs, and the best draft so far.
type evalProgress struct {
	Round    int    `json:"round"`
	Step     int    `json:"step"`
	Input    string `json:"input"`
	Draft    string `json:"draft,omitempty"`
	Best     string `json:"best,omitempty"`
	BestRank int    `json:"best_rank"`
}

// orchProgress is where an orchestrator run is: its progress step counter,
// the steps started so far in order, the results of those that finished
// (a failure's text too), and the steps of the current plan not started.
type orchProgress struct {
	Step    int               `json:"step"`
	Order   []planStep        `json:"order"`
	Results map[string]string `json:"results,omitempty"`
	Failed  map[string]bool   `json:"failed,omitempty"`
	Pending []planStep        `json:"pending,omitempty"`
	Limit   bool              `json:"limit,omitempty"`
}

func (p *orchProgress) orderOrNil() []planStep {
	if p == nil {
		return nil
	}
	return p.Order
}

func (p *orchProgress) pendingOrNil() []planStep {
	if p == nil {
		return nil
	}
	return p.Pending
}

// stepOutcome is one finished step: its answer, or its error's text.
type stepOutcome struct {
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
}

// resumeSteps is the checkpoint a top-level workflow of kind continues from
// (nil: it starts afresh).
func resumeSteps(ctx context.Context, c *Call, kind string) (*stepCheckpoint, error) {
	if c.Depth > 0 {
		return nil, nil
	}
	raw := c.takeResume()
	if raw == nil {
		return nil, nil
	}
	var cp stepCheckpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		return nil, fmt.Errorf("the requestState's progress: %w", err)
	}
	if cp.Kind != kind {
		return nil, fmt.Errorf("the requestState's progress is a %s's, not a %s's", cp.Kind, kind)
	}
	return &cp, nil
}

// record makes cp the checkpoint of a top-level workflow's call (when it is
// an input-required one); fresh forgets the answers given so far (they
// belong to steps done). It reports whether cp is recorded.
func (cp *stepCheckpoint) record(ctx context.Context, c *Call, fresh bool) bool {
	return c.Depth == 0 && c.setCheckpoint(fresh, cp.snapshot)
}

// finished records fan_out agent i's outcome.
func (cp *stepCheckpoint) finished(i int, text string, err error) {
	o := stepOutcome{Text: text}
	if err != nil {
		o = stepOutcome{Err: err.Error()}
	}
	cp.mu.Lock()
	if cp.Done == nil {
		cp.Done = map[int]stepOutcome{}
	}
	cp.Done[i] = o
	cp.mu.Unlock()
}

func (cp *stepCheckpoint) snapshot() json.RawMessage {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	b, _ := json.Marshal(cp) // strings only: always encodes
	return b
}

// step is next, a sub-call of c that runs one of c's steps (a tool call of
// its loop, a workflow's step), whose input requests to the caller are
// keyed under name (wire.Rounds.Scoped) when c is a top-level call, so
// that a replay of that step alone finds its answers.
func (c *Call) step(next *Call, name string) *Call {
	if c.Depth > 0 {
		return next
	}
	return next.scoped(name + "-")
}

// scoped is c whose input requests to the caller are keyed under scope;
// c itself when it is not bridged.
func (c *Call) scoped(scope string) *Call {
	if c.Rounds == nil {
		return c
	}
	s := *c
	s.Rounds = c.Rounds.Scoped(scope)
	return &s
}

// setCheckpoint makes fn the checkpoint of the call when the bridge runs
// it (wire.Rounds.SetCheckpoint), and reports whether it did.
func (c *Call) setCheckpoint(fresh bool, fn func() json.RawMessage) bool {
	return c.Rounds != nil && c.Rounds.SetCheckpoint(fresh, fn)
}

// takeResume is the checkpoint the call continues from, once (nil: it
// starts afresh, or is not bridged).
func (c *Call) takeResume() json.RawMessage {
	if c.Rounds == nil {
		return nil
	}
	return c.Rounds.TakeResume()
}

// unanswered reports an input request of the call that ended without the
// caller's answer (wire.Rounds.Unanswered).
func (c *Call) unanswered() bool { return c.Rounds != nil && c.Rounds.Unanswered() }
