package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// TestToolCallRequestJSON: the one encoding of a downstream tools/call is
// JSON that decodes to what was asked, whatever the tool's or the members'
// names hold (quotes, control characters, HTML, other scripts, invalid
// UTF-8), with the caller's members in a stable order.
func TestToolCallRequestJSON(t *testing.T) {
	for _, name := range []string{"echo", `say "hi"`, "a\x01b", "<tag>&", "héllo", "bad\xffutf8", `back\slash`} {
		r := &ToolCallRequest{
			ID: "pgw-call-1", Tool: name, Arguments: json.RawMessage(`{"x":1}`),
			ProgressToken: "p" + name, Traceparent: "00-abc-def-01",
			Params: map[string]json.RawMessage{"task": json.RawMessage(`{"ttl":5}`), name: json.RawMessage(`true`)},
			Meta:   map[string]json.RawMessage{"z": json.RawMessage(`1`), name: json.RawMessage(`2`), "a": json.RawMessage(`3`)},
		}
		body := r.Body()
		var got struct {
			ID     string         `json:"id"`
			Params map[string]any `json:"params"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%q: not JSON: %v\n%s", name, err, body)
		}
		want, _ := json.Marshal(name) // what encoding/json makes of the name
		var wantName string
		_ = json.Unmarshal(want, &wantName)
		if got.ID != "pgw-call-1" || got.Params["name"] != wantName || got.Params[wantName] != true {
			t.Errorf("%q: decoded %+v", name, got)
		}
		meta, _ := got.Params["_meta"].(map[string]any)
		wantMeta := map[string]any{"progressToken": "p" + wantName, "traceparent": "00-abc-def-01", "z": 1.0, wantName: 2.0, "a": 3.0}
		if !reflect.DeepEqual(meta, wantMeta) {
			t.Errorf("%q: _meta %v, want %v", name, meta, wantMeta)
		}
		if again := r.Body(); string(again) != string(body) {
			t.Errorf("%q: two encodings differ:\n%s\n%s", name, body, again)
		}
	}
}

// TestInflightKey: the key is fmt's %v of the id, as mcp-go's server keys
// a call in flight, for every id a request can carry.
func TestInflightKey(t *testing.T) {
	for _, id := range []any{1.0, 0.0, -3.0, 1e6, 1e21, 123456789.0, 0.5, 1e-7, "abc", "", int64(7), nil} {
		if got, want := string(AppendInflightKey([]byte("x"), "s1", id)), fmt.Sprintf("x%s:%v", "s1", id); got != want {
			t.Errorf("InflightKey(%#v) = %q, want %q", id, got, want)
		}
	}
}
