package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

func TestParseMessage(t *testing.T) {
	for _, c := range []struct {
		body                 string
		err                  string // "syntax", "other" or ""
		paramsRead, toolCall bool
		name                 string
		nameOK               bool
	}{
		{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, paramsRead: true, toolCall: true, name: "echo", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a\"b\u00e9"}}`, paramsRead: true, toolCall: true, name: `a"bé`, nameOK: true},
		{body: `{"method":"tools\/call","params":{"name":5}}`, paramsRead: true},
		{body: `{"method":"tools/call","params":{"name":null}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":{}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":5}`, toolCall: true},
		// Repeated params: mcp-go reads the last whole, so the fast path
		// leaves such a message alone.
		{body: `{"method":"tools/call","params":{"name":"a"},"params":{"arguments":{}}}`, toolCall: true, name: "a", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a"},"PARAMS":{}}`, toolCall: true, name: "a", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a"},"paramſ":{}}`, toolCall: true, name: "a", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a","x":{"params":1,"params":2}}}`, paramsRead: true, toolCall: true, name: "a", nameOK: true},
		{body: `{"method":"tools/call","params":["echo"]}`, toolCall: true},
		{body: `{"method":"tools/call"`, err: "syntax"},
		{body: `null`, err: "other"},
		{body: `[{"method":"tools/call"}]`, err: "other"},
		{body: `"tools/call"`, err: "other"},
	} {
		m, err := ParseMessage([]byte(c.body))
		var syntax *json.SyntaxError
		switch {
		case c.err == "" && err != nil, c.err == "syntax" && !errors.As(err, &syntax), c.err == "other" && (err == nil || errors.As(err, &syntax)):
			t.Errorf("%s: err %v, want %s", c.body, err, c.err)
			continue
		case err != nil:
			continue
		}
		name, ok := m.Params.name()
		if m.paramsRead != c.paramsRead || m.isMethod("tools/call") != c.toolCall || name != c.name || ok != c.nameOK {
			t.Errorf("%s: paramsRead %v, tools/call %v, name %q %v; want %v %v %q %v", c.body,
				m.paramsRead, m.isMethod("tools/call"), name, ok, c.paramsRead, c.toolCall, c.name, c.nameOK)
		}
	}
}

// FuzzParseMessage checks ParseMessage against decodeMessage (encoding/json):
// the same error or none, and the same members.
func FuzzParseMessage(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1}}}`)
	f.Add(` {"ID":"x","Method":"tools/call","params":null,"result":[1],"error":{"code":1}} `)
	f.Add(`{"method":"tools/call","params":{"name":"a"},"PARAMS":{}}`)
	f.Add(`{"method":"a","method":"b","params":{"NAME":"x","name":"y","task":{},"inputResponses":{},"requestState":"s"}}`)
	f.Add(`{"params":5,"id":null}`)
	f.Add(`{"Error":{"code":1},"RESULT":2,"JsonRpc":"2.0","Params":{"ARGUMENTS":[],"_META":{},"Task":1,"InputResponseS":2,"RequestStatE":3}}`)
	f.Add(`{"paramſ":{"naMe":1},"\u0069d":2}`)
	f.Add(`{"method":"tools/call"`)
	f.Add(`[1]`)
	f.Fuzz(func(t *testing.T, s string) {
		got, gotErr := ParseMessage([]byte(s))
		want, wantErr := decodeMessage([]byte(s))
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, want %v", s, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if g, w := messageString(got), messageString(want); g != w {
			t.Fatalf("%s:\n got %s\nwant %s", s, g, w)
		}
	})
}

func messageString(m *Message) string {
	p := m.Params
	return fmt.Sprintf("jsonrpc %q id %q method %q result %q error %q params{name %q arguments %q _meta %q task %q inputResponses %q requestState %q} read %v",
		m.JSONRPC, m.ID, m.Method, m.Result, m.Error, p.Name, p.Arguments, p.Meta, p.Task, p.InputResponses, p.RequestState, m.paramsRead)
}
