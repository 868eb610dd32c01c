package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// Input-required rounds through workflows (MCP 2026-07-28): a chain, a
// router, a parallel, an evaluator_optimizer and an orchestrator agent
// whose step "asker" (an llm agent) calls
// relayDown's eliciting tool. "prep" and the router's model use a second
// fake LLM, so that each fake's script is consumed in a known order and the
// steps that must not run again can be counted.

func startFlowsGateway(t *testing.T, asker, second *fakellm.Server, downURL string) *gw {
	t.Helper()
	return startGateway(t, fmt.Sprintf(`
name: mrtr-flows
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-test", timeout: 60s}
    second: {type: openai, base_url: %q, api_key: "sk-test", timeout: 60s}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  asker: {kind: llm, servers: [down]}
  prep: {kind: llm, model: second.fake-model}
  joiner: {kind: llm, model: passthrough}
  pipe: {kind: chain, sequence: [prep, asker]}
  triage: {kind: router, agents: [prep, asker], model: second.fake-model}
  panel: {kind: parallel, fan_out: [prep, asker], fan_in: joiner}
  refine: {kind: evaluator_optimizer, generator: prep, evaluator: asker}
  orch: {kind: orchestrator, model: second.fake-model, agents: [prep, asker]}
`, stateKeyB64, asker.OpenAIBaseURL(), second.OpenAIBaseURL(), downURL))
}

var askTool = fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)})

// A chain asked on the replica that holds it: the Go SDK caller answers
// with its handler; every step runs once.
func TestChainInputRequiredRoundTrip(t *testing.T) {
	d := newRelayDown(t)
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(fakellm.Text("prepared: greet bo"))
	f.Script(askTool, fakellm.Text("hello, bo"))
	g := startFlowsGateway(t, f, f2, d.ts.URL)
	cs := sdkSession(t, g.Base+"/agents/pipe/mcp", "", acceptName("bo"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := call(ctx, cs, "send_message", map[string]any{"message": "greet me"})
	if err != nil || got != "hello, bo" {
		t.Fatalf("send_message: %q, %v\n%s", got, err, g.Logs())
	}
	if n1, n2 := len(f.ChatRequests()), len(f2.ChatRequests()); n1 != 2 || n2 != 1 {
		t.Errorf("model turns: asker %d, prep %d; want 2 and 1", n1, n2)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="resumed"}`); v != 1 {
		t.Errorf("resumed rounds: %v, want 1", v)
	}
}

// flowOtherReplica runs agent's first round on one gateway and its retry
// on another that never saw the call, and returns the final answer. key is
// the input request the first round must ask.
func flowOtherReplica(t *testing.T, agent, key string, f, f2 *fakellm.Server) string {
	t.Helper()
	d := newRelayDown(t)
	a, b := startFlowsGateway(t, f, f2, d.ts.URL), startFlowsGateway(t, f, f2, d.ts.URL)
	args := map[string]any{"message": "greet me"}
	status, msg := agentCall(t, a.Base+"/agents/"+agent+"/mcp", "send_message", 1, args, elicitCaps, nil)
	got, state := inputRequired(t, msg)
	if status != http.StatusOK || got != key {
		t.Fatalf("first round: HTTP %d, key %q, want %q", status, got, key)
	}
	_, msg = agentCall(t, b.Base+"/agents/"+agent+"/mcp", "send_message", 2, args, elicitCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "cy"}}}})
	if v, _ := b.metric(t, `pallasgw_input_required_total{outcome="replayed"}`); v != 1 {
		t.Errorf("continued rounds on the second replica: %v", v)
	}
	return answerText(t, msg)
}

// A chain continued on another replica starts at the step that asked,
// with that step's input: the step before it does not run again.
func TestChainInputRequiredOtherReplica(t *testing.T) {
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(fakellm.Text("prepared: greet cy"))
	f.Script(askTool, askTool, fakellm.Text("hello, cy"))
	if got := flowOtherReplica(t, "pipe", "step2-elicitation-1", f, f2); !strings.Contains(got, "hello, cy") {
		t.Fatalf("continued chain answered %q", got)
	}
	if n := len(f2.ChatRequests()); n != 1 {
		t.Errorf("the first step ran %d times, want once", n)
	}
	reqs := f.ChatRequests()
	if len(reqs) != 3 || reqs[1].Chat.LastUserText() != "prepared: greet cy" {
		t.Errorf("asker's turns: %d; the replayed step's input %q, want the first step's output", len(reqs), reqs[1].Chat.LastUserText())
	}
}

// A router continued on another replica delegates to the agent it chose:
// the model is not asked to route again.
func TestRouterInputRequiredOtherReplica(t *testing.T) {
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(fakellm.ToolCalls(fakellm.Call{ID: "r1", Name: "route_to_agent", Args: json.RawMessage(`{"agent":"asker","reason":"it asks"}`)}))
	f.Script(askTool, askTool, fakellm.Text("hello, cy"))
	if got := flowOtherReplica(t, "triage", "route-elicitation-1", f, f2); !strings.Contains(got, "hello, cy") {
		t.Fatalf("continued router answered %q", got)
	}
	if n := len(f2.ChatRequests()); n != 1 {
		t.Errorf("the router's model was asked %d times, want once", n)
	}
}

// A parallel run continued on another replica runs only the fan_out agent
// that asked, then fan_in with every answer.
func TestParallelInputRequiredOtherReplica(t *testing.T) {
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(fakellm.Text("prep says hi"))
	f.Script(askTool, askTool, fakellm.Text("hello, cy"))
	got := flowOtherReplica(t, "panel", "agent2-elicitation-1", f, f2)
	if !strings.Contains(got, "prep says hi") || !strings.Contains(got, "hello, cy") {
		t.Fatalf("continued parallel run answered %q, want both answers", got)
	}
	if n := len(f2.ChatRequests()); n != 1 {
		t.Errorf("the fan_out agent that had answered ran %d times, want once", n)
	}
}

// An evaluator_optimizer continued on another replica in its evaluator
// step keeps the generator's draft: the generator does not run again.
func TestEvaluatorInputRequiredOtherReplica(t *testing.T) {
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(fakellm.Text("the draft"))
	f.Script(askTool, askTool, fakellm.Text(`{"rating":"EXCELLENT","feedback":"fine, cy"}`))
	if got := flowOtherReplica(t, "refine", "evaluator1-elicitation-1", f, f2); !strings.Contains(got, `"text":"the draft"`) {
		t.Fatalf("continued evaluator_optimizer answered %q, want the draft", got)
	}
	if n := len(f2.ChatRequests()); n != 1 {
		t.Errorf("the generator ran %d times, want once", n)
	}
	if reqs := f.ChatRequests(); len(reqs) != 3 || !strings.Contains(reqs[1].Chat.LastUserText(), "the draft") {
		t.Errorf("the evaluator's turns: %d, the replayed one not about the draft", len(reqs))
	}
}

// An orchestrator continued on another replica keeps its plan and the
// results of the steps that finished: the planner and the first step do
// not run again; the step that asked does, then the answer is written.
func TestOrchestratorInputRequiredOtherReplica(t *testing.T) {
	f, f2 := fakellm.New(t), fakellm.New(t)
	f2.Script(
		fakellm.ToolCalls(fakellm.Call{ID: "p1", Name: "submit_plan", Args: json.RawMessage(
			`{"steps":[{"id":"s1","agent":"prep","task":"prepare"},{"id":"s2","agent":"asker","task":"greet","depends_on":["s1"]}]}`)}),
		fakellm.Text("prepared"),
		fakellm.Text("final: hello, cy"))
	f.Script(askTool, askTool, fakellm.Text("hello, cy"))
	if got := flowOtherReplica(t, "orch", "step-s2-elicitation-1", f, f2); !strings.Contains(got, "final: hello, cy") {
		t.Fatalf("continued orchestrator answered %q", got)
	}
	reqs := f2.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("planner, first step and answer: %d model turns, want 3 (none again)", len(reqs))
	}
	if last := reqs[2].Chat.LastUserText(); !strings.Contains(last, "prepared") || !strings.Contains(last, "hello, cy") {
		t.Errorf("the answer was written from %q, want both steps' results", last)
	}
}
