package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// orchestratorRunner is kind orchestrator. A planner (the
// agent's model) breaks the request into steps, each a task for one of
// the agent's child agents: the whole plan up front (plan: full) or one
// round of steps at a time after seeing the results so far (plan:
// iterative). Steps whose dependencies are done run in parallel; at most
// max_iterations steps run in all. A last model turn writes the answer from
// the steps' results. Nothing survives the call.
type orchestratorRunner struct {
	a     *agent
	model agents.Model
}

// planStep is one step of a plan as the planner writes it.
type planStep struct {
	ID        string   `json:"id"`
	Agent     string   `json:"agent"`
	Task      string   `json:"task"`
	DependsOn []string `json:"depends_on"`
}

// plan is the planner's answer: steps, or (iterative) done.
type plan struct {
	Steps []planStep `json:"steps"`
	Done  bool       `json:"done"`
}

// orchestration is the state of one call.
type orchestration struct {
	c       *Call
	step    int               // progress step counter
	results map[string]string // step id -> answer (or failure text)
	order   []planStep        // steps run, in order
	failed  map[string]bool   // step ids that failed
	byID    map[string]string // step id -> agent, of the steps run
	limit   bool              // max_iterations cut the work short
	pending []planStep        // the plan's steps not started yet (for the checkpoint)
	// mu guards the fields above that steps write (results, failed) and
	// that the checkpoint reads while steps run (step, order, limit,
	// pending); the run's goroutine writes those under it.
	mu sync.Mutex
}

const (
	planTool = "submit_plan"
	// planAttempts bounds the planner turns spent on one plan: a refused
	// plan is sent back once with the reason.
	planAttempts = 2
)

var errNoPlan = errors.New("the planner's answer held no plan")

func (r *orchestratorRunner) Run(ctx context.Context, c *Call) (string, error) {
	o := &orchestration{c: c, results: map[string]string{}, failed: map[string]bool{}, byID: map[string]string{}}
	rest, err := r.resume(ctx, o)
	if err != nil {
		return "", err
	}
	if rest != nil { // continued after an input-required round
		if err := r.execute(ctx, o, rest, true); err != nil {
			return "", err
		}
	}
	switch {
	case r.a.Config.Plan == config.PlanIterative:
		err = r.runIterative(ctx, o)
	case rest == nil:
		err = r.runFull(ctx, o)
	}
	if err != nil {
		return "", err
	}
	return r.synthesize(ctx, o)
}

func (r *orchestratorRunner) runFull(ctx context.Context, o *orchestration) error {
	p, err := r.plan(ctx, o, r.a.Config.MaxIterations)
	if err != nil {
		return err
	}
	return r.execute(ctx, o, p.Steps, false)
}

func (r *orchestratorRunner) runIterative(ctx context.Context, o *orchestration) error {
	for {
		left := r.a.Config.MaxIterations - len(o.order)
		if left <= 0 {
			o.mu.Lock()
			o.limit = true
			o.mu.Unlock()
			return nil
		}
		p, err := r.plan(ctx, o, left)
		if err != nil {
			return err
		}
		if len(p.Steps) == 0 {
			return nil // done
		}
		if err := r.execute(ctx, o, p.Steps, false); err != nil {
			return err
		}
	}
}

// plan asks the planner for steps (at most maxSteps), sending a refused plan
// back once with the reason.
func (r *orchestratorRunner) plan(ctx context.Context, o *orchestration, maxSteps int) (*plan, error) {
	problem := ""
	for attempt := 1; ; attempt++ {
		o.c.Progress.Send(fmt.Sprintf("%s step %d (llm)", r.a.Name, o.nextStep()))
		resp, err := r.model.Chat(ctx, r.planRequest(o, maxSteps, problem), o.c)
		if err != nil {
			return nil, err
		}
		p, err := readPlan(resp)
		if err == nil {
			err = r.check(o, p, maxSteps)
		}
		if err == nil {
			r.a.Log.Debug("planned", zap.String("request_id", o.c.RequestID), zap.Int("steps", len(p.Steps)))
			return p, nil
		}
		if attempt >= planAttempts {
			return nil, fmt.Errorf("planner: %w", err)
		}
		problem = err.Error()
	}
}

func (r *orchestratorRunner) planRequest(o *orchestration, maxSteps int, problem string) llm.Request {
	cfg := r.a.Config
	var sys strings.Builder
	sys.WriteString(strings.TrimSpace(cfg.Instruction))
	sys.WriteString("\n\nYou plan work for these agents; each step is one task for one agent:\n")
	for _, n := range cfg.Agents {
		fmt.Fprintf(&sys, "- %s: %s\n", n, r.a.Agent(n).Config.Description)
	}
	fmt.Fprintf(&sys, "\nCall %s with the steps (at most %d). Give each step an id; a step that needs the results of others lists their ids in depends_on, and steps without pending dependencies run in parallel. ", planTool, maxSteps)
	if cfg.Plan == config.PlanIterative {
		sys.WriteString("Plan only the next steps, given the results so far; when the results suffice to answer, call it with done: true and no steps.")
	} else {
		sys.WriteString("Plan the whole work up front.")
	}
	sys.WriteString(` Without tools, answer with the same JSON: {"steps": [{"id": "s1", "agent": "...", "task": "...", "depends_on": []}], "done": false}`)
	var u strings.Builder
	u.WriteString("## Request\n" + o.c.Message)
	if len(o.order) > 0 {
		u.WriteString("\n\n## Steps run so far\n")
		writeResults(&u, o, r.maxBytes())
	}
	if problem != "" {
		u.WriteString("\n\nYour previous plan was refused: " + problem + ". Send a corrected plan.")
	}
	msgs := append(append([]llm.Message{}, o.c.History...), llm.Message{Role: llm.RoleUser, Text: u.String(), Images: o.c.Images})
	return llm.Request{System: sys.String(), Messages: msgs, Tools: []llm.Tool{{Name: planTool, Description: "Submit the plan.", InputSchema: r.planSchema()}}}
}

func (r *orchestratorRunner) planSchema() json.RawMessage {
	schema, _ := json.Marshal(map[string]any{
		"type": "object", "required": []string{"steps"},
		"properties": map[string]any{
			"steps": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []string{"id", "agent", "task"},
				"properties": map[string]any{
					"id":         map[string]any{"type": "string"},
					"agent":      map[string]any{"type": "string", "enum": r.a.Config.Agents},
					"task":       map[string]any{"type": "string"},
					"depends_on": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				},
			}},
			"done": map[string]any{"type": "boolean"},
		},
	})
	return schema
}

// readPlan takes the plan from the planner's tool call, else from JSON in
// its text (an object, or a bare list of steps).
func readPlan(resp *llm.Response) (*plan, error) {
	for _, tc := range resp.ToolCalls {
		var p plan
		if json.Unmarshal(tc.Arguments, &p) == nil {
			return &p, nil
		}
	}
	s := resp.Text
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		var p plan
		if json.Unmarshal([]byte(s[i:j+1]), &p) == nil && (p.Steps != nil || p.Done) {
			return &p, nil
		}
	}
	if i, j := strings.Index(s, "["), strings.LastIndex(s, "]"); i >= 0 && j > i {
		var steps []planStep
		if json.Unmarshal([]byte(s[i:j+1]), &steps) == nil {
			return &plan{Steps: steps}, nil
		}
	}
	return nil, errNoPlan
}

// check refuses a plan that names an agent not in agents, repeats a step
// id, depends on an unknown step, has a cycle or exceeds maxSteps. Steps
// without an id get one.
func (r *orchestratorRunner) check(o *orchestration, p *plan, maxSteps int) error {
	if len(p.Steps) > maxSteps {
		return fmt.Errorf("the plan has %d steps, more than the %d allowed (max_iterations %d)", len(p.Steps), maxSteps, r.a.Config.MaxIterations)
	}
	if len(p.Steps) == 0 && !p.Done && r.a.Config.Plan == config.PlanFull {
		return errors.New("the plan has no steps")
	}
	ids := map[string]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.ID == "" {
			s.ID = fmt.Sprintf("s%d", len(o.order)+i+1)
		}
		if !slices.Contains(r.a.Config.Agents, s.Agent) {
			return fmt.Errorf("step %s names unknown agent %q (use one of %s)", s.ID, s.Agent, strings.Join(r.a.Config.Agents, ", "))
		}
		if ids[s.ID] || o.byID[s.ID] != "" {
			return fmt.Errorf("step id %q is used twice", s.ID)
		}
		if strings.TrimSpace(s.Task) == "" {
			return fmt.Errorf("step %s has no task", s.ID)
		}
		ids[s.ID] = true
	}
	for _, s := range p.Steps {
		for _, d := range s.DependsOn {
			if !ids[d] && o.byID[d] == "" {
				return fmt.Errorf("step %s depends on unknown step %q", s.ID, d)
			}
		}
	}
	if _, err := waves(p.Steps, o.byID); err != nil {
		return err
	}
	return nil
}

// waves orders steps into rounds whose dependencies are all met by earlier
// rounds (or by done, steps already run).
func waves(steps []planStep, done map[string]string) ([][]planStep, error) {
	met := map[string]bool{}
	for id := range done {
		met[id] = true
	}
	var out [][]planStep
	left := steps
	for len(left) > 0 {
		var ready, rest []planStep
		for _, s := range left {
			ok := true
			for _, d := range s.DependsOn {
				ok = ok && met[d]
			}
			if ok {
				ready = append(ready, s)
			} else {
				rest = append(rest, s)
			}
		}
		if len(ready) == 0 {
			return nil, fmt.Errorf("steps %s depend on each other in a cycle", stepIDs(rest))
		}
		for _, s := range ready {
			met[s.ID] = true
		}
		out, left = append(out, ready), rest
	}
	return out, nil
}

func stepIDs(steps []planStep) string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// execute runs checked steps, each round's in parallel. A failed step's
// error becomes its result; only the call ending stops the work. again:
// the steps continue a run stopped by an input-required round, whose
// answers the first round's steps still need.
func (r *orchestratorRunner) execute(ctx context.Context, o *orchestration, steps []planStep, again bool) error {
	rounds, err := waves(steps, o.byID)
	if err != nil {
		return err
	}
	for i, round := range rounds {
		var wg sync.WaitGroup
		o.mu.Lock()
		o.pending = slices.Concat(rounds[i+1:]...)
		for _, s := range round {
			o.byID[s.ID] = s.Agent
			o.order = append(o.order, s)
		}
		o.mu.Unlock()
		r.checkpoint(ctx, o, !(again && i == 0))
		for _, s := range round {
			step := o.nextStep()
			turn := Turn{Message: stepInput(o, s), ConversationID: o.c.ConversationID}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer r.a.Recover(o.c.RequestID, "step "+s.ID, func(err error) { o.record(s.ID, "", err) })
				out, err := r.a.delegate(ctx, o.c, "step-"+scopeName(s.ID), step, s.Agent, turn, nil)
				if ctx.Err() == nil {
					o.record(s.ID, out, err)
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := unanswered(ctx, o.c); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.pending = nil
	o.mu.Unlock()
	return nil
}

// checkpoint makes the orchestration's progress the call's checkpoint
// (resume.go): the steps run, the results of those that finished, the
// steps of the plan not started, read when the caller is asked for input.
func (r *orchestratorRunner) checkpoint(ctx context.Context, o *orchestration, fresh bool) {
	if o.c.Depth > 0 {
		return
	}
	o.c.SetCheckpoint(fresh, func() json.RawMessage {
		o.mu.Lock()
		defer o.mu.Unlock()
		b, _ := json.Marshal(&stepCheckpoint{Kind: config.KindOrchestrator, Orch: &orchProgress{Step: o.step, Order: o.order,
			Results: o.results, Failed: o.failed, Pending: o.pending, Limit: o.limit}})
		return b
	})
}

// resume restores the orchestration a top-level run continues from, and
// returns the steps to run first: those of the stopped round that had not
// finished, then the rest of the plan (nil: the run starts afresh).
func (r *orchestratorRunner) resume(ctx context.Context, o *orchestration) ([]planStep, error) {
	cp, err := resumeSteps(ctx, o.c, config.KindOrchestrator) // resume.go
	if err != nil || cp == nil {
		return nil, err
	}
	p := cp.Orch
	bad := p == nil
	for _, s := range slices.Concat(p.orderOrNil(), p.pendingOrNil()) {
		bad = bad || !slices.Contains(r.a.Config.Agents, s.Agent)
	}
	if bad {
		return nil, errors.New("the requestState's progress is not an orchestrator's this agent can continue")
	}
	var rest []planStep
	o.step, o.limit = p.Step, p.Limit
	for _, s := range p.Order {
		if res, ok := p.Results[s.ID]; ok {
			o.order, o.byID[s.ID], o.results[s.ID] = append(o.order, s), s.Agent, res
			o.failed[s.ID] = p.Failed[s.ID]
			continue
		}
		rest = append(rest, s) // running when the caller was asked: runs again
		o.step--
	}
	return append(rest, p.Pending...), nil
}

// scopeName is a step id as the key of the caller's input requests takes
// it: the id itself when it is at most 32 letters, digits, '_' and '.';
// else those characters of it (at most 24) and a digest of the whole id,
// so that two ids never share a key.
func scopeName(id string) string {
	b := []byte{}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c == '_' || c == '.' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z') {
			b = append(b, c)
		}
	}
	if string(b) == id && len(id) <= 32 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return string(b[:min(len(b), 24)]) + "~" + hex.EncodeToString(sum[:4])
}

// nextStep counts one more progress step and returns its number.
func (o *orchestration) nextStep() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.step++
	return o.step
}

func (o *orchestration) record(id, answer string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.failed[id] = true
		answer = "failed: " + err.Error()
	}
	o.results[id] = answer
}

// stepInput is a step's message: its task, and the results of the steps
// it depends on.
func stepInput(o *orchestration, s planStep) string {
	if len(s.DependsOn) == 0 {
		return s.Task
	}
	var b strings.Builder
	b.WriteString(s.Task + "\n\n## Results of earlier steps\n")
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range s.DependsOn {
		fmt.Fprintf(&b, "\n### %s (%s)\n%s\n", d, o.byID[d], o.results[d])
	}
	return b.String()
}

// writeResults lists every step run with its result, each cut at maxBytes.
func writeResults(b *strings.Builder, o *orchestration, maxBytes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.order {
		fmt.Fprintf(b, "\n### %s: %s — %s\n%s\n", s.ID, s.Agent, s.Task, agents.Cut(o.results[s.ID], maxBytes))
	}
}

func (r *orchestratorRunner) maxBytes() int { return r.a.Gateway().Limits.MaxToolResultBytes }

// synthesize is the last model turn: the answer from the steps' results.
func (r *orchestratorRunner) synthesize(ctx context.Context, o *orchestration) (string, error) {
	var u strings.Builder
	u.WriteString("## Request\n" + o.c.Message + "\n\n## Results of the steps\n")
	if len(o.order) == 0 {
		u.WriteString("\n(no steps were run)\n")
	}
	writeResults(&u, o, r.maxBytes())
	if o.limit {
		fmt.Fprintf(&u, "\nThe step limit (max_iterations %d) was reached before the plan was complete.\n", r.a.Config.MaxIterations)
	}
	u.WriteString("\nWrite the final answer to the request from these results.")
	o.c.Progress.Send(fmt.Sprintf("%s step %d (llm)", r.a.Name, o.nextStep()))
	msgs := append(append([]llm.Message{}, o.c.History...), llm.Message{Role: llm.RoleUser, Text: u.String(), Images: o.c.Images})
	resp, err := r.model.Chat(ctx, llm.Request{System: r.a.Config.Instruction, Messages: msgs}, o.c)
	if err != nil {
		return "", err
	}
	if o.limit {
		r.a.Metrics().AgentIterationLimit.WithLabelValues(r.a.Name).Inc()
	}
	return resp.Text, nil
}
