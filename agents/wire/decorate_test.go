package wire

import (
	"encoding/json"
	"testing"
)

// DecorateJSON adds what mcp-go's decorateResponse adds for a 2026-07-28
// caller, keeps a result that has it as sent, and without an identity
// (a task's result) leaves _meta alone.
func TestDecorateJSON(t *testing.T) {
	self := json.RawMessage(`{"name":"px","version":"1"}`)
	for _, c := range []struct {
		name, in string
		self     json.RawMessage
		want     string
	}{
		{"typed already", `{"resultType":"complete", "x":1}`, nil, `{"resultType":"complete", "x":1}`},
		{"no resultType", `{"x":"<b>"}`, nil, `{"resultType":"complete","x":"<b>"}`},
		{"null resultType", `{"resultType":null,"x":1}`, nil, `{"resultType":"complete","x":1}`},
		{"identity added", `{"_meta":{"a":1},"resultType":"task"}`, self,
			`{"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"px","version":"1"}},"resultType":"task"}`},
		{"identity kept", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"down"}},"resultType":"complete"}`, self,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"down"}},"resultType":"complete"}`},
		{"not an object", `[1]`, self, `[1]`},
		{"resultType not a string", `{"resultType":5}`, nil, `{"resultType":5}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(DecorateJSON(json.RawMessage(c.in), c.self)); got != c.want {
				t.Errorf("DecorateJSON(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

// A raw result is decorated as the same result through DecorateJSON, on
// both of decorateRaw's ways (a head before the result; a rebuilt one).
func TestDecorateRawMatchesDecorateJSON(t *testing.T) {
	self := json.RawMessage(`{"name":"px","version":"1"}`)
	for _, in := range []string{`{"content":[]}`, `{}`, `{"_meta":{"k":"v"},"content":[]}`, `{"_meta":null,"isError":true}`, `{"resultType":null}`} {
		rr, err := PeekResult(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		head, rest, ok := decorateRaw(rr, self)
		if !ok {
			t.Fatalf("%s: declined", in)
		}
		var got, want any
		if err := json.Unmarshal(append(append([]byte(nil), head...), rest...), &got); err != nil {
			t.Fatalf("%s: %s%s: %v", in, head, rest, err)
		}
		_ = json.Unmarshal(DecorateJSON(json.RawMessage(in), self), &want)
		if g, w := mustJSON(got), mustJSON(want); g != w {
			t.Errorf("%s: raw %s, want %s", in, g, w)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
