package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// chainRunner runs sequence in order, each output the next input.
type chainRunner struct{ a *agent }

func (r *chainRunner) Run(ctx context.Context, c *Call) (string, error) {
	seq := r.a.Config.Sequence
	msg, first := c.Message, 0
	cp, err := resumeSteps(ctx, c, config.KindChain) // resume.go
	if err != nil {
		return "", err
	}
	if cp != nil {
		if cp.Step < 0 || cp.Step >= len(seq) {
			return "", fmt.Errorf("the requestState's progress names step %d of a chain of %d", cp.Step+1, len(seq))
		}
		first, msg = cp.Step, cp.Input
	}
	for i := first; i < len(seq); i++ {
		name := seq[i]
		sub := r.a.Agent(name)
		label := name + "/" + sub.Config.ToolName
		(&stepCheckpoint{Kind: config.KindChain, Step: i, Input: msg}).record(ctx, c, !(cp != nil && i == first))
		c.Progress.Send(fmt.Sprintf("%s step %d (tool)", r.a.Name, i+1))
		c.Progress.Send(label + ": started")
		next := c.Sub(msg, c.Progress.Prefixed(label+": "))
		if i == 0 {
			// The first agent sees the caller's whole turn.
			next.Turn = c.Turn
		}
		out, err := sub.Run(ctx, c.Step(next, fmt.Sprintf("step%d", i+1)))
		if err != nil {
			c.Progress.Send(label + ": failed")
			return "", fmt.Errorf("chain step %d (%s): %w", i+1, name, err)
		}
		c.Progress.Send(label + ": completed")
		if err := unanswered(ctx, c); err != nil {
			return "", err
		}
		msg = out
	}
	return msg, nil
}

// unanswered ends a top-level workflow whose caller was asked for input
// and never answered: nobody will read its answer, so no more steps.
func unanswered(ctx context.Context, c *Call) error {
	if c.Depth == 0 && c.Unanswered() {
		return agents.ErrUnanswered
	}
	return nil
}

// routerRunner asks the model to pick one agent, then delegates.
type routerRunner struct {
	a     *agent
	model agents.Model
}

const routeTool = "route_to_agent"

func (r *routerRunner) Run(ctx context.Context, c *Call) (string, error) {
	names := r.a.Config.Agents
	schema, _ := json.Marshal(map[string]any{
		"type": "object", "required": []string{"agent", "reason"},
		"properties": map[string]any{
			"agent":  map[string]any{"type": "string", "enum": names},
			"reason": map[string]any{"type": "string"},
		},
	})
	var catalogue strings.Builder
	for _, n := range names {
		fmt.Fprintf(&catalogue, "- %s: %s\n", n, r.a.Agent(n).Config.Description)
	}
	system := strings.TrimSpace(r.a.Config.Instruction + "\n\nRoute the user's message to exactly one of these agents by calling " +
		routeTool + ":\n" + catalogue.String())
	cp, err := resumeSteps(ctx, c, config.KindRouter) // resume.go
	if err != nil {
		return "", err
	}
	var choice string
	if cp != nil {
		if !slices.Contains(names, cp.Route) {
			return "", fmt.Errorf("the requestState's progress routes to %q, which is not one of this router's agents", cp.Route)
		}
		choice = cp.Route // chosen before the input-required round: the model is not asked again
	} else {
		c.Progress.Send(r.a.Name + " step 1 (llm)")
		resp, err := r.model.Chat(ctx, llm.Request{System: system, Tools: []llm.Tool{{Name: routeTool, Description: "Pick the agent that should answer.", InputSchema: schema}},
			Messages: append(append([]llm.Message{}, c.History...), llm.Message{Role: llm.RoleUser, Text: c.Message, Images: c.Images})}, c)
		if err != nil {
			return "", err
		}
		var reason string
		choice, reason = pickRoute(resp, names)
		r.a.Log.Info("routed", zap.String("request_id", c.RequestID), zap.String("to", choice), zap.String("reason", trimForLog(reason, 200)))
	}
	(&stepCheckpoint{Kind: config.KindRouter, Route: choice}).record(ctx, c, cp == nil)
	sub := r.a.Agent(choice)
	label := choice + "/" + sub.Config.ToolName
	c.Progress.Send(r.a.Name + " step 1 (tool)")
	c.Progress.Send(label + ": started")
	next := c.Sub(c.Message, c.Progress.Prefixed(label+": "))
	next.Turn = c.Turn
	out, err := sub.Run(ctx, c.Step(next, "route"))
	if err != nil {
		c.Progress.Send(label + ": failed")
		return "", fmt.Errorf("routed to %s: %w", choice, err)
	}
	c.Progress.Send(label + ": completed")
	return out, nil
}

// pickRoute reads the model's choice from its tool call, else from an agent
// name in its text, else takes the first agent.
func pickRoute(resp *llm.Response, names []string) (string, string) {
	for _, tc := range resp.ToolCalls {
		var args struct{ Agent, Reason string }
		if json.Unmarshal(tc.Arguments, &args) == nil {
			for _, n := range names {
				if n == args.Agent {
					return n, args.Reason
				}
			}
		}
	}
	for _, n := range names {
		if strings.Contains(resp.Text, n) {
			return n, "named in the model's answer"
		}
	}
	return names[0], "no usable choice from the model; first agent"
}

// parallelRunner fans the message out, then gives the answers to fan_in.
type parallelRunner struct{ a *agent }

func (r *parallelRunner) Run(ctx context.Context, c *Call) (string, error) {
	fan := r.a.Config.FanOut
	answers := make([]string, len(fan))
	errs := make([]error, len(fan))
	resumed, err := resumeSteps(ctx, c, config.KindParallel) // resume.go
	if err != nil {
		return "", err
	}
	cp := &stepCheckpoint{Kind: config.KindParallel}
	var done map[int]stepOutcome // answered before the input-required round
	if resumed != nil {
		for i := range resumed.Done {
			if i < 0 || i >= len(fan) {
				return "", fmt.Errorf("the requestState's progress names fan_out agent %d of %d", i+1, len(fan))
			}
		}
		done, cp.Done = resumed.Done, maps.Clone(resumed.Done)
	}
	cp.record(ctx, c, resumed == nil)
	var wg sync.WaitGroup
	c.Progress.Send(r.a.Name + " step 1 (tool)")
	for i, name := range fan {
		sub := r.a.Agent(name)
		label := name + "/" + sub.Config.ToolName
		if o, ok := done[i]; ok {
			answers[i] = o.Text
			if o.Err != "" {
				errs[i] = errors.New(o.Err)
			}
			continue
		}
		c.Progress.Send(label + ": started")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.a.Recover(c.RequestID, "agent "+name, func(err error) {
				errs[i] = err
				c.Progress.Send(label + ": failed")
			})
			next := c.Sub(c.Message, c.Progress.Prefixed(label+": "))
			next.Turn = c.Turn
			answers[i], errs[i] = sub.Run(ctx, c.Step(next, fmt.Sprintf("agent%d", i+1)))
			if errs[i] != nil {
				c.Progress.Send(label + ": failed")
			} else {
				c.Progress.Send(label + ": completed")
			}
			if ctx.Err() == nil {
				cp.finished(i, answers[i], errs[i])
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err := unanswered(ctx, c); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Original request:\n%s\n\nAnswers from %d agents:\n", c.Message, len(fan))
	failed := 0
	for i, name := range fan {
		if errs[i] != nil {
			failed++
			fmt.Fprintf(&b, "\n### %s (failed)\n%v\n", name, errs[i])
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n%s\n", name, answers[i])
	}
	if failed == len(fan) {
		return "", fmt.Errorf("every fan_out agent failed: %w", errs[0])
	}
	in := r.a.Agent(r.a.Config.FanIn)
	label := in.Name + "/" + in.Config.ToolName
	c.Progress.Send(r.a.Name + " step 2 (tool)")
	c.Progress.Send(label + ": started")
	out, err := in.Run(ctx, c.Step(c.Sub(b.String(), c.Progress.Prefixed(label+": ")), "fan_in"))
	if err != nil {
		c.Progress.Send(label + ": failed")
		return "", fmt.Errorf("fan_in %s: %w", in.Name, err)
	}
	c.Progress.Send(label + ": completed")
	return out, nil
}
