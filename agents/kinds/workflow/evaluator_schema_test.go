package workflow_test

import (
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// The evaluator of an evaluator_optimizer is asked for its rating as
// structured output: OpenAI response_format json_schema, Anthropic
// output_config.format. A provider that refuses it (HTTP 400) is asked
// again for text, which is parsed.
func TestEvaluatorStructuredOutput(t *testing.T) {
	gen, critic, claude := fakellm.New(t), fakellm.New(t), fakellm.New(t)
	cfg := `
name: unit
models:
  providers:
    gen: {type: openai, base_url: ` + gen.OpenAIBaseURL() + `}
    critic: {type: openai, base_url: ` + critic.OpenAIBaseURL() + `}
    claude: {type: anthropic, base_url: ` + claude.AnthropicBaseURL() + `}
agents:
  writer: {model: gen.w}
  oai_critic: {model: critic.c}
  claude_critic: {model: claude.c}
  refine_oai: {kind: evaluator_optimizer, generator: writer, evaluator: oai_critic}
  refine_claude: {kind: evaluator_optimizer, generator: writer, evaluator: claude_critic}
`
	providers := map[string]llm.Provider{}
	for name, c := range map[string]llm.ProviderConfig{
		"gen":    {Kind: "openai", BaseURL: gen.OpenAIBaseURL()},
		"critic": {Kind: "openai", BaseURL: critic.OpenAIBaseURL()},
		"claude": {Kind: "anthropic", BaseURL: claude.AnthropicBaseURL()},
	} {
		p, err := llm.New(c)
		if err != nil {
			t.Fatal(err)
		}
		providers[name] = p
	}
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, providers)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	send := func(agent string) string {
		return ta.Send(t, agent, agenttest.SendBody("1", "send_message", `{"message":"write"}`, ""), hdr).Body
	}

	gen.Script(fakellm.Text("draft one"))
	critic.Script(fakellm.Text(`{"rating":"GOOD","feedback":"fine"}`))
	if body := send("refine_oai"); !strings.Contains(body, "draft one") || strings.Contains(body, `"isError":true`) {
		t.Fatalf("refine_oai: %s", body)
	}
	rf, _ := critic.ChatRequests()[0].Chat.Body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "evaluation" || js["strict"] != true || js["schema"] == nil {
		t.Errorf("the evaluator's response_format = %v", rf)
	}
	if _, set := gen.ChatRequests()[0].Chat.Body["response_format"]; set {
		t.Error("the generator was asked for structured output")
	}

	gen.Script(fakellm.Text("draft two"))
	claude.Script(fakellm.Text(`{"rating":"EXCELLENT","feedback":"great"}`))
	if body := send("refine_claude"); !strings.Contains(body, "draft two") {
		t.Fatalf("refine_claude: %s", body)
	}
	oc, _ := claude.ChatRequests()[0].Chat.Body["output_config"].(map[string]any)
	if f, _ := oc["format"].(map[string]any); f["type"] != "json_schema" || f["schema"] == nil {
		t.Errorf("the Anthropic evaluator's output_config = %v", oc)
	}

	// A server that refuses response_format: asked again for text.
	gen.Script(fakellm.Text("draft three"))
	critic.Script(fakellm.Status(400), fakellm.Text("GOOD: fine as text"))
	if body := send("refine_oai"); !strings.Contains(body, "draft three") || strings.Contains(body, `"isError":true`) {
		t.Fatalf("refine_oai after a refusal: %s", body)
	}
	reqs := critic.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("critic got %d requests, want 3 (one, then the refused one and its text retry)", len(reqs))
	}
	if _, set := reqs[2].Chat.Body["response_format"]; set {
		t.Error("the retry still asks for structured output")
	}
}
