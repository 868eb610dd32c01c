package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// evalOptRunner is kind evaluator_optimizer: the generator
// drafts, the evaluator rates the draft, and the generator refines it with
// the evaluator's feedback until the rating reaches min_rating or
// max_refinements refinements have run. The answer is the best-rated draft
// (the latest of equals).
type evalOptRunner struct {
	a   *agent
	min int // config.RatingRank of min_rating
}

// evaluation is one verdict of the evaluator.
type evaluation struct {
	rank     int    // config.RatingRank; 0 (POOR) when the answer named no rating
	rating   string // as config.Ratings spells it
	feedback string
}

func (r *evalOptRunner) Run(ctx context.Context, c *Call) (string, error) {
	cfg := r.a.Config
	step, first := 0, 0
	var best, generated string // generated: a draft finished before an input-required round
	bestRank := -1
	msg := c.Message
	cp, err := resumeSteps(ctx, c, config.KindEvaluatorOptimizer) // resume.go
	if err != nil {
		return "", err
	}
	if cp != nil {
		e := cp.Eval
		if e == nil || e.Round < 0 || e.Round > cfg.MaxRefinements || e.BestRank < -1 || e.BestRank >= len(config.Ratings) {
			return "", errors.New("the requestState's progress is not an evaluator_optimizer's this agent can continue")
		}
		step, first, msg, generated, best, bestRank = e.Step, e.Round, e.Input, e.Draft, e.Best, e.BestRank
	}
	for round := first; ; round++ {
		again := cp != nil && round == first // the round the input-required round stopped in
		progress := func(draft string) *stepCheckpoint {
			return &stepCheckpoint{Kind: config.KindEvaluatorOptimizer, Eval: &evalProgress{Round: round, Step: step, Input: msg,
				Draft: draft, Best: best, BestRank: bestRank}}
		}
		draft := generated
		if !again || generated == "" {
			progress("").record(ctx, c, !again)
			step++
			turn := c.Turn
			turn.Message = msg
			draft, err = r.a.delegate(ctx, c, fmt.Sprintf("generator%d", round+1), step, cfg.Generator, turn, nil)
			if err != nil {
				return "", fmt.Errorf("generator %s: %w", cfg.Generator, err)
			}
			if err := unanswered(ctx, c); err != nil {
				return "", err
			}
		}
		progress(draft).record(ctx, c, !(again && generated != ""))
		step++
		verdict, err := r.a.delegate(ctx, c, fmt.Sprintf("evaluator%d", round+1), step, cfg.Evaluator,
			Turn{Message: evaluationRequest(c.Message, draft), ConversationID: c.ConversationID}, evaluationSchema)
		if err != nil {
			return "", fmt.Errorf("evaluator %s: %w", cfg.Evaluator, err)
		}
		if err := unanswered(ctx, c); err != nil {
			return "", err
		}
		ev := parseEvaluation(verdict)
		if ev.rank >= bestRank {
			best, bestRank = draft, ev.rank
		}
		c.Progress.Send(fmt.Sprintf("%s round %d: %s rated %s (min %s)", r.a.Name, round+1, cfg.Evaluator, ev.rating, cfg.MinRating))
		r.a.Log.Debug("evaluated", zap.String("request_id", c.RequestID), zap.Int("round", round+1), zap.String("rating", ev.rating))
		if ev.rank >= r.min {
			return draft, nil
		}
		if round >= cfg.MaxRefinements {
			c.Progress.Send(fmt.Sprintf("%s: max_refinements (%d) reached below %s; answering with the best draft (%s)",
				r.a.Name, cfg.MaxRefinements, cfg.MinRating, config.Ratings[bestRank]))
			return best, nil
		}
		msg = refinementRequest(c.Message, draft, ev)
	}
}

// delegate runs one step of a workflow kind: the named sub-agent with
// turn, its progress prefixed "{sub}/{tool}: " and framed by
// "{agent} step N (tool)" and started/completed/failed. schema, when set,
// asks the sub-agent's model for a structured answer.
func (a *agent) delegate(ctx context.Context, c *Call, scope string, step int, name string, turn Turn, schema *llm.OutputSchema) (string, error) {
	sub := a.Agent(name)
	label := name + "/" + sub.Config.ToolName
	c.Progress.Send(fmt.Sprintf("%s step %d (tool)", a.Name, step))
	c.Progress.Send(label + ": started")
	next := c.Sub(turn.Message, c.Progress.Prefixed(label+": "))
	next.Turn = turn
	next.SetSchema(schema)
	out, err := sub.Run(ctx, c.Step(next, scope))
	if err != nil {
		c.Progress.Send(label + ": failed")
		return "", err
	}
	c.Progress.Send(label + ": completed")
	return out, nil
}

// evaluationSchema is the evaluator's answer as structured output, where
// the provider takes it (OpenAI response_format json_schema, Anthropic
// output_config.format); parseEvaluation reads the text either way.
var evaluationSchema = &llm.OutputSchema{Name: "evaluation", Schema: map[string]any{
	"type": "object",
	"properties": map[string]any{
		"rating":   map[string]any{"type": "string", "enum": []any{"EXCELLENT", "GOOD", "FAIR", "POOR"}},
		"feedback": map[string]any{"type": "string"},
	},
	"required":             []any{"rating", "feedback"},
	"additionalProperties": false,
}}

func evaluationRequest(request, draft string) string {
	return "Evaluate the response below to the request below.\n\n" +
		"Rate it EXCELLENT, GOOD, FAIR or POOR and say what would improve it. Answer with JSON only: " +
		`{"rating": "GOOD", "feedback": "..."}` + "\n\n## Request\n" + request + "\n\n## Response\n" + draft
}

func refinementRequest(request, draft string, ev evaluation) string {
	return "Improve your response to the request below using the evaluator's feedback. Answer with the improved response only.\n\n" +
		"## Request\n" + request + "\n\n## Your previous response\n" + draft +
		"\n\n## Feedback (rated " + ev.rating + ")\n" + ev.feedback
}

// parseEvaluation reads an evaluator's answer: JSON {"rating", "feedback"}
// (possibly in a code fence or among other text), or text that starts with
// the rating word ("POOR: too short", "**Fair** - ..."). An answer with no
// rating counts as POOR, its text the feedback.
func parseEvaluation(s string) evaluation {
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		var v struct {
			Rating   string `json:"rating"`
			Feedback any    `json:"feedback"`
		}
		if json.Unmarshal([]byte(s[i:j+1]), &v) == nil {
			if rank := config.RatingRank(strings.ToUpper(strings.TrimSpace(v.Rating))); rank >= 0 {
				fb, ok := v.Feedback.(string)
				if !ok && v.Feedback != nil {
					raw, _ := json.Marshal(v.Feedback)
					fb = string(raw)
				}
				return evaluation{rank: rank, rating: config.Ratings[rank], feedback: fb}
			}
		}
	}
	t := strings.TrimLeft(s, " \t\r\n*_#`\"'")
	word := strings.ToUpper(strings.TrimFunc(strings.SplitN(t, " ", 2)[0], func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z')
	}))
	if end := strings.IndexFunc(word, func(r rune) bool { return r < 'A' || r > 'Z' }); end > 0 {
		word = word[:end]
	}
	if rank := config.RatingRank(word); rank >= 0 {
		fb := strings.TrimLeft(t[min(len(t), len(word)):], " \t*_`\"':.-–—\r\n")
		return evaluation{rank: rank, rating: config.Ratings[rank], feedback: fb}
	}
	return evaluation{rank: 0, rating: config.Ratings[0], feedback: strings.TrimSpace(s)}
}
