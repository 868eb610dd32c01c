package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The tools spliced into a request body are the tools the SDK types encode,
// in order, whether the cache is cold or warm; params.extra.tools still
// wins as before.
func TestToolJSONBodies(t *testing.T) {
	tools := []Tool{
		{Name: "srv__echo", Description: "Echoes text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		{Name: "bare"},
	}
	req := Request{Model: "m", System: "s", Messages: []Message{{Role: RoleUser, Text: "hi"}}, Tools: tools}
	cases := []struct {
		name   string
		body   func(Request) ([]byte, error)
		encode func(Tool) ([]byte, error)
	}{
		{"openai", func(r Request) ([]byte, error) { return openAIBody(r, newToolJSON(encodeOpenAITool)) }, encodeOpenAITool},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []any
			for _, tl := range tools {
				b, err := c.encode(tl)
				if err != nil {
					t.Fatal(err)
				}
				var v any
				json.Unmarshal(b, &v)
				want = append(want, v)
			}
			for round := 0; round < 2; round++ {
				b, err := c.body(req)
				if err != nil {
					t.Fatal(err)
				}
				var got map[string]any
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatalf("body is not JSON: %v\n%s", err, b)
				}
				if !reflect.DeepEqual(got["tools"], any(want)) || got["model"] != "m" || got["stream"] != true {
					t.Errorf("body %s", b)
				}
			}
			r := req
			r.Params.Extra = map[string]any{"tools": []any{}}
			b, _ := c.body(r)
			var got map[string]any
			json.Unmarshal(b, &got)
			if tl, _ := got["tools"].([]any); len(tl) != 0 {
				t.Errorf("extra.tools must win: %s", b)
			}
		})
	}
}
