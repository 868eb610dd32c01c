package fakellm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestCallFound: the step calls the tool the last tool result names first,
// in both APIs, and says why not when the result names none or the request
// does not offer it.
func TestCallFound(t *testing.T) {
	const found = `{"query":"file a bug","tools":[{"name":"tracker__create_issue"},{"name":"tracker__list_issues"}]}`
	bodies := map[string]func(result string, tools ...string) string{
		"openai": func(result string, tools ...string) string {
			var defs []string
			for _, n := range tools {
				defs = append(defs, `{"type":"function","function":{"name":"`+n+`","parameters":{"type":"object"}}}`)
			}
			res, _ := json.Marshal(result)
			return `{"model":"m","stream":true,"tools":[` + strings.Join(defs, ",") + `],"messages":[
				{"role":"user","content":"file a bug"},
				{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"search_tools","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":` + string(res) + `}]}`
		},
		"anthropic": func(result string, tools ...string) string {
			var defs []string
			for _, n := range tools {
				defs = append(defs, `{"name":"`+n+`","input_schema":{"type":"object"}}`)
			}
			res, _ := json.Marshal(result)
			return `{"model":"m","stream":true,"max_tokens":10,"tools":[` + strings.Join(defs, ",") + `],"messages":[
				{"role":"user","content":"file a bug"},
				{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"search_tools","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":` + string(res) + `}]}]}]}`
		},
	}
	paths := map[string]string{"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
	for api, body := range bodies {
		t.Run(api, func(t *testing.T) {
			srv := fakellm.New(t)
			for _, tc := range []struct {
				name, body, want string
			}{
				{"calls the first tool found", body(found, "search_tools", "tracker__create_issue"), `tracker__create_issue`},
				{"not offered", body(found, "search_tools"), `tracker__create_issue is not among the tools offered`},
				{"names no tool", body(`{"tools":[]}`, "search_tools"), `the last tool result names no tool`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					srv.Script(fakellm.CallFound(json.RawMessage(`{"title":"crash"}`)))
					resp, err := http.Post(srv.URL()+paths[api], "application/json", strings.NewReader(tc.body))
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					text, calls := readStream(t, resp.Body)
					want := tc.want
					if tc.name == "calls the first tool found" {
						if calls != want || text != "" {
							t.Fatalf("tool calls %q, text %q; want a call of %s", calls, text, want)
						}
						return
					}
					if calls != "" || !strings.Contains(text, want) {
						t.Fatalf("tool calls %q, text %q; want a text with %q", calls, text, want)
					}
				})
			}
		})
	}
}

// readStream joins the text and the tool call names of an answer of either
// API.
func readStream(t *testing.T, r io.Reader) (text, calls string) {
	t.Helper()
	b, _ := io.ReadAll(r)
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Name string `json:"name"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content_block"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		for _, c := range ev.Choices {
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				if tc.Function.Name != "" {
					names = append(names, tc.Function.Name)
				}
			}
		}
		text += ev.Delta.Text
		if ev.ContentBlock.Type == "tool_use" {
			names = append(names, ev.ContentBlock.Name)
		}
	}
	return text, strings.Join(names, ",")
}
