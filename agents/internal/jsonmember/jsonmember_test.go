package jsonmember

import (
	"encoding/json"
	"testing"
)

// FuzzEach checks Each against encoding/json: for a valid JSON
// object, the last value of each name is what decoding into a
// map[string]json.RawMessage gives; anything else valid is not an object.
func FuzzEach(f *testing.F) {
	f.Add(`{"progressToken":1,"io.modelcontextprotocol/clientCapabilities":{"a":[1,{"b":"}"}]}}`)
	f.Add(` { "a\"b" : "x\\" , "a\u0022b":[ ] , "\u00e9":null,"":true } `)
	f.Add(`{"k":"v","k":2}`)
	f.Add(`{"\ud800":1,"é":-1.5e+3}`)
	f.Add(`[1,2]`)
	f.Add(`"s"`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var want map[string]json.RawMessage
		wantObject := json.Unmarshal([]byte(s), &want) == nil && want != nil
		got := map[string]json.RawMessage{}
		if ok := Each([]byte(s), func(name string, value []byte) { got[name] = value }); ok != wantObject {
			t.Fatalf("%s: object %v, want %v", s, ok, wantObject)
		}
		if !wantObject {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d names, want %d: %q vs %q", s, len(got), len(want), got, want)
		}
		for name, v := range want {
			if string(got[name]) != string(v) {
				t.Fatalf("%s: %q = %s, want %s", s, name, got[name], v)
			}
		}
	})
}
