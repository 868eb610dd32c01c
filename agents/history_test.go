package agents_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// toolTranscript is a tool-using conversation as mcpctl's messages
// override holds it (OpenAI's shape), with a system turn, a second call
// in the flat shape, a tool turn answering no call, and a call the
// history never answers.
const toolTranscript = `[
 {"role":"system","content":"Answer in French."},
 {"role":"user","content":"What is in a.txt?"},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"files__read","arguments":"{\"path\":\"a.txt\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"bonjour"},
 {"role":"tool","tool_call_id":"call_9","content":"answers nothing"},
 {"role":"assistant","content":"It says bonjour."},
 {"role":"assistant","content":"","tool_calls":[{"id":"call_2","name":"files__list","arguments":{}}]}
]`

// A tool-using transcript replays: system and tool turns (with their
// tool-call ids) reach each provider in its own shape; a tool turn that
// answers no earlier call, and a call never answered, are skipped and
// counted, never sent. A system turn instructs the model as the agent's
// instruction does: an agent that does not let callers change that
// (overrides.system) skips it as bad_role.
func TestHistoryWithToolTurns(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			fake := fakellm.New(t)
			base := fake.OpenAIBaseURL()
			if kind == "anthropic" {
				base = fake.AnthropicBaseURL()
			}
			cfg := `
name: unit
models:
  providers:
    ` + kind + `: {base_url: "` + base + `", api_key: k}
agents:
  a: {model: ` + kind + `.m, instruction: "Be brief.", overrides: {system: true}}
  b: {model: ` + kind + `.m, instruction: "Be brief."}
`
			var p llm.Provider
			var err error
			if kind == "openai" {
				p, err = llm.NewOpenAI(llm.ProviderConfig{Kind: kind, BaseURL: base, APIKey: "k"})
			} else {
				p, err = llm.NewAnthropic(llm.ProviderConfig{Kind: kind, BaseURL: base, APIKey: "k"})
			}
			if err != nil {
				t.Fatal(err)
			}
			ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{kind: p})
			args, _ := json.Marshal(map[string]any{"message": "And b.txt?", "history": json.RawMessage(toolTranscript)})
			x := ta.Send(t, "a", agenttest.SendBody("1", "send_message", string(args), ""), agenttest.LegacySSE)
			if !strings.Contains(x.Body, "echo: And b.txt?") {
				t.Fatalf("answer %s", x)
			}
			reqs := fake.ChatRequests()
			if len(reqs) != 1 {
				t.Fatalf("%d chat requests", len(reqs))
			}
			c := reqs[0].Chat
			var roles []string
			for _, m := range c.Messages {
				roles = append(roles, m.Role)
			}
			switch kind {
			case "openai":
				if got := strings.Join(roles, ","); got != "system,system,user,assistant,tool,assistant,user" {
					t.Fatalf("roles %s", got)
				}
				if c.Messages[1].Text != "Answer in French." {
					t.Errorf("system turn %+v", c.Messages[1])
				}
				if tc := c.Messages[3].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1" || tc[0].Name != "files__read" || string(tc[0].Args) != `{"path":"a.txt"}` {
					t.Errorf("assistant tool calls %+v", tc)
				}
				if m := c.Messages[4]; m.ToolCallID != "call_1" || m.Text != "bonjour" {
					t.Errorf("tool turn %+v", m)
				}
			case "anthropic":
				if got := strings.Join(roles, ","); got != "user,assistant,user,assistant,user" {
					t.Fatalf("roles %s", got)
				}
				if c.System != "Be brief.\nAnswer in French." {
					t.Errorf("system %q", c.System)
				}
				if tc := c.Messages[1].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1" || tc[0].Name != "files__read" {
					t.Errorf("tool_use %+v", tc)
				}
				if r := c.Messages[2].ToolResults; len(r) != 1 || r[0].ToolUseID != "call_1" || r[0].Text != "bonjour" {
					t.Errorf("tool_result %+v", r)
				}
			}
			for _, reason := range []string{"bad_tool_call", "unanswered_tool_call"} {
				if n := agenttest.CounterValue(ta.Metrics.HistorySkipped.WithLabelValues("a", reason)); n != 1 {
					t.Errorf("skipped %s: %v, want 1", reason, n)
				}
			}

			ta.Send(t, "b", agenttest.SendBody("2", "send_message", string(args), ""), agenttest.LegacySSE)
			reqs = fake.ChatRequests()
			if c := reqs[len(reqs)-1].Chat; strings.Contains(fmt.Sprint(c.Messages), "French") || strings.Contains(c.System, "French") ||
				agenttest.CounterValue(ta.Metrics.HistorySkipped.WithLabelValues("b", "bad_role")) != 1 {
				t.Errorf("agent b without overrides.system took the system turn: system %q, messages %+v", c.System, c.Messages)
			}
		})
	}
}
