package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

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
	raw := c.TakeResume()
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
	return c.Depth == 0 && c.SetCheckpoint(fresh, cp.snapshot)
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
