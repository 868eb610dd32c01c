package workflow_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/kinds/workflow"
	"github.com/pallasgw/pallasgw/agents/llm"
)

func lastUser(req llm.Request) string { return req.Messages[len(req.Messages)-1].Text }

const workflowConfig = `
name: unit
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1"}
agents:
  writer: {model: openai.writer, description: writes}
  critic: {model: openai.critic}
  research: {model: openai.echo, description: finds facts}
  refine: {kind: evaluator_optimizer, generator: writer, evaluator: critic, max_refinements: 2}
  strict: {kind: evaluator_optimizer, generator: writer, evaluator: critic, min_rating: EXCELLENT, max_refinements: 2}
  orch: {kind: orchestrator, model: openai.planner, agents: [research, writer], max_iterations: 3}
  stepwise: {kind: orchestrator, model: openai.planner, plan: iterative, agents: [research, writer], max_iterations: 2}
`

var progressSSE = `"progressToken":"p1"`

func callAgent(t *testing.T, ta *agenttest.Agents, agent, msg string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"message": msg})
	return ta.Send(t, agent, agenttest.SendBody("1", "send_message", string(args), progressSSE), agenttest.LegacySSE).Body
}

func TestEvaluatorOptimizer(t *testing.T) {
	tests := []struct {
		name, agent string
		verdicts    []string
		want        string   // in the answer
		progress    []string // in order
		drafts      int
	}{
		{"refined until good", "refine", []string{"POOR: too short", `{"rating": "GOOD", "feedback": "fine"}`}, "draft 2",
			[]string{"refine step 1 (tool)", "writer/send_message: started", "writer/send_message: completed", "refine step 2 (tool)",
				"critic/send_message: completed", "refine round 1: critic rated POOR (min GOOD)", "refine step 3 (tool)",
				"refine round 2: critic rated GOOD (min GOOD)", "refine: done"}, 2},
		{"never satisfied: the best draft after max_refinements", "strict", []string{"FAIR: meh", "**Good** - better", "POOR: worse"}, "draft 2",
			[]string{"strict round 1: critic rated FAIR (min EXCELLENT)", "strict round 3: critic rated POOR (min EXCELLENT)",
				"strict: max_refinements (2) reached below EXCELLENT; answering with the best draft (GOOD)"}, 3},
		{"no rating word counts as poor", "refine", []string{"I cannot tell", "```json\n{\"rating\":\"excellent\",\"feedback\":{\"x\":1}}\n```"}, "draft 2", nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := agenttest.NewFuncLLM(func(n int, req llm.Request) (*llm.Response, error) {
				if req.Model == "writer" {
					return agenttest.Text(fmt.Sprintf("draft %d", n))
				}
				return agenttest.Text(tc.verdicts[n-1])
			})
			ta := agenttest.NewWith(t, workflowConfig, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": m})
			body := callAgent(t, ta, tc.agent, "write a poem")
			if !strings.Contains(body, `"text":"`+tc.want+`"`) || strings.Contains(body, `"isError":true`) {
				t.Fatalf("answer: %s", body)
			}
			checkOrder(t, body, tc.progress)
			drafts := m.Requests("writer")
			if len(drafts) != tc.drafts {
				t.Fatalf("%d drafts, want %d", len(drafts), tc.drafts)
			}
			if lastUser(drafts[0]) != "write a poem" {
				t.Errorf("first draft asked %q", lastUser(drafts[0]))
			}
			if r := lastUser(drafts[1]); !strings.Contains(r, "## Your previous response\ndraft 1") || !strings.Contains(r, "write a poem") {
				t.Errorf("refinement asked %q", r)
			}
			if tc.verdicts[0] == "POOR: too short" && !strings.Contains(lastUser(drafts[1]), "(rated POOR)\ntoo short") {
				t.Errorf("the feedback did not reach the generator: %q", lastUser(drafts[1]))
			}
			if r := lastUser(m.Requests("critic")[0]); !strings.Contains(r, "## Response\ndraft 1") {
				t.Errorf("evaluator asked %q", r)
			}
		})
	}
}

// checkOrder checks that the messages appear in body in order.
func checkOrder(t *testing.T, body string, msgs []string) {
	t.Helper()
	at := 0
	for _, m := range msgs {
		i := strings.Index(body[at:], `"message":"`+m+`"`)
		if i < 0 {
			t.Errorf("progress %q missing (or out of order) in:\n%s", m, body)
			return
		}
		at += i
	}
}

// plannerCall is a submit_plan tool call with steps.
func plannerCall(steps string) (*llm.Response, error) {
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "p", Name: "submit_plan", Arguments: json.RawMessage(steps)}}, FinishReason: "tool_calls"}, nil
}

func TestOrchestrator(t *testing.T) {
	tests := []struct {
		name, agent string
		plans       []string // the planner's answers in turn
		wantAnswer  string
		wantErr     string
		progress    []string
		planners    int // planner turns (synthesis excluded)
	}{
		{"full plan, parallel then dependent", "orch", []string{`{"steps": [
			{"id": "a", "agent": "research", "task": "facts about owls"},
			{"id": "b", "agent": "research", "task": "facts about bats"},
			{"id": "c", "agent": "writer", "task": "write it up", "depends_on": ["a", "b"]}]}`},
			"synthesized", "", []string{"orch step 1 (llm)", "research/send_message: started", "writer/send_message: started",
				"writer/send_message: completed", "orch step 5 (llm)", "orch: done"}, 1},
		{"plan as JSON text", "orch", []string{"Here:\n```json\n{\"steps\": [{\"id\": \"a\", \"agent\": \"research\", \"task\": \"owls\"}]}\n```"},
			"synthesized", "", []string{"orch step 2 (tool)"}, 1},
		{"unknown agent, refused twice", "orch", []string{`{"steps": [{"id": "a", "agent": "ghost", "task": "boo"}]}`, `{"steps": [{"id": "a", "agent": "ghost", "task": "boo"}]}`},
			"", `planner: step a names unknown agent \"ghost\" (use one of research, writer)`, []string{"orch step 2 (llm)"}, 2},
		{"unknown agent, then corrected", "orch", []string{`{"steps": [{"id": "a", "agent": "ghost", "task": "boo"}]}`, `{"steps": [{"id": "a", "agent": "research", "task": "boo"}]}`},
			"synthesized", "", []string{"orch step 3 (tool)"}, 2},
		{"plan over max_iterations", "orch", []string{`{"steps": [{"agent": "research", "task": "1"}, {"agent": "research", "task": "2"}, {"agent": "research", "task": "3"}, {"agent": "research", "task": "4"}]}`},
			"", "planner: the plan has 4 steps, more than the 3 allowed (max_iterations 3)", nil, 2},
		{"a cycle", "orch", []string{`{"steps": [{"id": "a", "agent": "research", "task": "1", "depends_on": ["b"]}, {"id": "b", "agent": "research", "task": "2", "depends_on": ["a"]}]}`},
			"", "planner: steps a, b depend on each other in a cycle", nil, 2},
		{"iterative until done", "stepwise", []string{`{"steps": [{"id": "a", "agent": "research", "task": "owls"}]}`, `{"done": true}`},
			"synthesized", "", []string{"stepwise step 1 (llm)", "stepwise step 2 (tool)", "stepwise step 3 (llm)", "stepwise step 4 (llm)"}, 2},
		{"iterative stopped by max_iterations", "stepwise", []string{`{"steps": [{"id": "a", "agent": "research", "task": "owls"}]}`, `{"steps": [{"id": "b", "agent": "writer", "task": "more", "depends_on": ["a"]}]}`},
			"synthesized", "", []string{"stepwise step 4 (tool)", "stepwise step 5 (llm)"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := agenttest.NewFuncLLM(func(n int, req llm.Request) (*llm.Response, error) {
				switch {
				case req.Model == "planner" && len(req.Tools) == 0:
					return agenttest.Text("synthesized")
				case req.Model == "planner":
					p := tc.plans[min(n, len(tc.plans))-1]
					if strings.HasPrefix(p, "{") {
						return plannerCall(p)
					}
					return agenttest.Text(p)
				}
				return agenttest.Text(req.Model + " did: " + lastUser(req))
			})
			ta := agenttest.NewWith(t, workflowConfig, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": m})
			body := callAgent(t, ta, tc.agent, "tell me about night animals")
			if tc.wantErr != "" {
				if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, tc.wantErr) {
					t.Fatalf("want error %q, got %s", tc.wantErr, body)
				}
			} else if !strings.Contains(body, `"text":"`+tc.wantAnswer+`"`) {
				t.Fatalf("answer: %s", body)
			}
			checkOrder(t, body, tc.progress)
			var planners []llm.Request
			for _, r := range m.Requests("planner") {
				if len(r.Tools) > 0 {
					planners = append(planners, r)
				}
			}
			if len(planners) != tc.planners {
				t.Errorf("%d planner turns, want %d", len(planners), tc.planners)
			}
			if len(planners) > 1 && !strings.Contains(lastUser(planners[1]), "Your previous plan was refused") && tc.agent == "orch" {
				t.Errorf("the refusal did not reach the planner: %q", lastUser(planners[1]))
			}
		})
	}
}

// A dependent step gets the results of the steps it depends on; the
// synthesis sees every result.
func TestOrchestratorPassesResults(t *testing.T) {
	m := agenttest.NewFuncLLM(func(n int, req llm.Request) (*llm.Response, error) {
		switch {
		case req.Model == "planner" && len(req.Tools) == 0:
			return agenttest.Text("final")
		case req.Model == "planner":
			return plannerCall(`{"steps": [{"id": "a", "agent": "research", "task": "owls"}, {"id": "c", "agent": "writer", "task": "write", "depends_on": ["a"]}]}`)
		}
		return agenttest.Text(req.Model + " did: " + lastUser(req))
	})
	ta := agenttest.NewWith(t, workflowConfig, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": m})
	if body := callAgent(t, ta, "orch", "night animals"); !strings.Contains(body, `"text":"final"`) {
		t.Fatal(body)
	}
	if w := lastUser(m.Requests("writer")[0]); !strings.Contains(w, "write\n\n## Results of earlier steps\n\n### a (research)\necho did: owls") {
		t.Errorf("writer was asked %q", w)
	}
	var synth llm.Request
	for _, r := range m.Requests("planner") {
		if len(r.Tools) == 0 {
			synth = r
		}
	}
	if s := lastUser(synth); !strings.Contains(s, "### c: writer — write\nwriter did: write") || !strings.Contains(s, "## Request\nnight animals") {
		t.Errorf("synthesis was asked %q", s)
	}
}

// Step ids key the caller's input requests without two ids sharing a key.
func TestScopeNameDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"s1", "a-1", "a1", "a 1", "ä1", strings.Repeat("x", 40), strings.Repeat("x", 41), "", "-"} {
		name := workflow.ScopeName(id)
		if other, ok := seen[name]; ok {
			t.Errorf("ids %q and %q share the key %q", other, id, name)
		}
		seen[name] = id
	}
	if workflow.ScopeName("s1") != "s1" {
		t.Errorf("a plain id is kept as it is: %q", workflow.ScopeName("s1"))
	}
}
