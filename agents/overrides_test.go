package agents_test

import (
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
)

const overridesConfig = `
name: unit
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1"}
  capabilities:
    openai.m: {max_output_tokens: 80}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
agents:
  helper: {model: openai.helper}
  tuned:
    model: openai.m
    instruction: base
    servers: [files]
    agents: [helper]
    tools: {deny: ["files__gamma"]}
    params: {temperature: 0.2, max_tokens: 100}
    overrides: {params: true, system: true, tools: true}
  plain: {model: openai.m, servers: [files]}
`

func TestSendMessageOverrides(t *testing.T) {
	down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("alpha"), mcpgo.NewTool("beta"), mcpgo.NewTool("gamma")}}}
	tests := []struct {
		name, agent, args string
		wantErr           string
		check             func(t *testing.T, req llm.Request)
	}{
		{"params refused when not enabled", "plain", `{"message":"hi","params":{"temperature":1}}`,
			"params is not accepted by this agent (its config does not set overrides.params)", nil},
		{"system refused when not enabled", "plain", `{"message":"hi","system_append":"x"}`, "overrides.system", nil},
		{"tools refused when not enabled", "plain", `{"message":"hi","tools":["*"]}`, "overrides.tools", nil},
		{"unknown param", "tuned", `{"message":"hi","params":{"playback":["x"]}}`, `params: unknown parameter \"playback\"`, nil},
		{"bad param value", "tuned", `{"message":"hi","params":{"temperature":"hot"}}`, "params: temperature must be a number", nil},
		{"params merged over the agent's", "tuned", `{"message":"hi","params":{"temperature":0.9}}`, "", func(t *testing.T, req llm.Request) {
			if *req.Params.Temperature != 0.9 || *req.Params.MaxTokens != 80 {
				t.Errorf("params %v %v", *req.Params.Temperature, *req.Params.MaxTokens)
			}
		}},
		{"a param out of range", "tuned", `{"message":"hi","params":{"temperature":3}}`, "params: temperature 3 is out of range 0 to 2", nil},
		{"response_format outside the provider's set", "tuned", `{"message":"hi","params":{"response_format":{"type":"bogus"}}}`,
			`params: response_format type \"bogus\" is not one of text, json_object, json_schema`, nil},
		{"tool_choice outside the provider's set", "tuned", `{"message":"hi","params":{"tool_choice":"sometimes"}}`,
			`params: tool_choice \"sometimes\" is not one of \"none\", \"auto\", \"required\"`, nil},
		{"tool_choice of the provider's set", "tuned", `{"message":"hi","params":{"tool_choice":"required"}}`, "", func(t *testing.T, req llm.Request) {
			if req.Params.ToolChoice != "required" {
				t.Errorf("tool_choice %v", req.Params.ToolChoice)
			}
		}},
		{"too many stop sequences", "tuned", `{"message":"hi","params":{"stop":["a","b","c","d","e"]}}`, "params: stop at most 4 stop sequences (got 5)", nil},
		{"null clears the agent's value", "tuned", `{"message":"hi","params":{"temperature":null}}`, "", func(t *testing.T, req llm.Request) {
			if req.Params.Temperature != nil {
				t.Errorf("temperature %v, want unset", *req.Params.Temperature)
			}
		}},
		{"max_tokens clamped to the model's max_output_tokens", "tuned", `{"message":"hi","params":{"max_tokens":5000}}`, "", func(t *testing.T, req llm.Request) {
			if *req.Params.MaxTokens != 80 {
				t.Errorf("max_tokens %d, want 80", *req.Params.MaxTokens)
			}
		}},
		{"max_tokens under the limit kept", "tuned", `{"message":"hi","params":{"max_tokens":50}}`, "", func(t *testing.T, req llm.Request) {
			if *req.Params.MaxTokens != 50 {
				t.Errorf("max_tokens %d, want 50", *req.Params.MaxTokens)
			}
		}},
		{"no overrides: the agent's own", "tuned", `{"message":"hi"}`, "", func(t *testing.T, req llm.Request) {
			if *req.Params.Temperature != 0.2 || req.System != "base" || len(req.Tools) != 3 {
				t.Errorf("params %v, system %q, %d tools", *req.Params.Temperature, req.System, len(req.Tools))
			}
		}},
		{"system override and append", "tuned", `{"message":"hi","system_override":"other","system_append":"and more"}`, "", func(t *testing.T, req llm.Request) {
			if req.System != "other\n\nand more" {
				t.Errorf("system %q", req.System)
			}
		}},
		{"system append", "tuned", `{"message":"hi","system_append":"be brief"}`, "", func(t *testing.T, req llm.Request) {
			if req.System != "base\n\nbe brief" {
				t.Errorf("system %q", req.System)
			}
		}},
		{"tools only narrow", "tuned", `{"message":"hi","tools":["files__*a", "helper"]}`, "", func(t *testing.T, req llm.Request) {
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Name)
			}
			// gamma matches but the agent denies it.
			if strings.Join(names, ",") != "files__alpha,files__beta,helper" {
				t.Errorf("tools %v", names)
			}
		}},
		{"tools narrowed to one", "tuned", `{"message":"hi","tools":["files__alpha"]}`, "", func(t *testing.T, req llm.Request) {
			if len(req.Tools) != 1 || req.Tools[0].Name != "files__alpha" {
				t.Errorf("tools %v", req.Tools)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := agenttest.NewFuncLLM(func(int, llm.Request) (*llm.Response, error) { return agenttest.Text("ok") })
			ta := agenttest.NewWith(t, overridesConfig, down, map[string]llm.Provider{"openai": m})
			x := ta.Send(t, tc.agent, agenttest.SendBody("1", "send_message", tc.args, ""), agenttest.LegacySSE)
			if tc.wantErr != "" {
				if !strings.Contains(x.Body, `"isError":true`) || !strings.Contains(x.Body, tc.wantErr) {
					t.Fatalf("want error %q: %s", tc.wantErr, x)
				}
				if n := len(m.Requests("m")); n != 0 {
					t.Errorf("the model was called %d times", n)
				}
				return
			}
			reqs := m.Requests("m")
			if len(reqs) != 1 || !strings.Contains(x.Body, `"text":"ok"`) {
				t.Fatalf("%d model turns: %s", len(reqs), x)
			}
			tc.check(t, reqs[0])
		})
	}
}

// The override arguments appear in the schema only when enabled.
func TestOverridesSchema(t *testing.T) {
	ta := agenttest.NewWith(t, overridesConfig, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": agenttest.NewFuncLLM(nil)})
	for agent, want := range map[string]bool{"tuned": true, "plain": false} {
		st := agents.MCPServer(ta.Set.Get(agent)).GetTool("send_message")
		schema := string(st.Tool.RawInputSchema)
		for _, arg := range []string{`"params"`, `"system_override"`, `"system_append"`, `"tools"`} {
			if strings.Contains(schema, arg) != want {
				t.Errorf("%s: %s in schema = %v: %s", agent, arg, !want, schema)
			}
		}
	}
}
