package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		body                 string
		err                  string // "syntax", "other" or ""
		paramsRead, toolCall bool
		name                 string
		nameOK               bool
	}{
		{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, paramsRead: true, toolCall: true, name: "echo", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a\"b\u00e9"}}`, paramsRead: true, toolCall: true, name: `a"bé`, nameOK: true},
		{body: `{"method":"tools\/call","params":{"name":5}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":{"name":null}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":{}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":5}`, toolCall: true},
		// Repeated params: the last one is read whole, as mcp-go reads it.
		{body: `{"method":"tools/call","params":{"name":"a"},"params":{"arguments":{}}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":{"name":"a"},"PARAMS":{}}`, paramsRead: true, toolCall: true},
		{body: `{"method":"tools/call","params":{"name":"a"},"paramſ":{"name":"b"}}`, paramsRead: true, toolCall: true, name: "b", nameOK: true},
		{body: `{"method":"tools/call","params":{"name":"a","x":{"params":1,"params":2}}}`, paramsRead: true, toolCall: true, name: "a", nameOK: true},
		{body: `{"method":"tools/call","params":["echo"]}`, toolCall: true},
		{body: `{"method":"tools/call"`, err: "syntax"},
		{body: `null`, err: "other"},
		{body: `[{"method":"tools/call"}]`, err: "other"},
		{body: `"tools/call"`, err: "other"},
	} {
		m, err := Parse([]byte(c.body))
		var syntax *json.SyntaxError
		switch {
		case c.err == "" && err != nil, c.err == "syntax" && !errors.As(err, &syntax), c.err == "other" && (err == nil || errors.As(err, &syntax)):
			t.Errorf("%s: err %v, want %s", c.body, err, c.err)
			continue
		case err != nil:
			continue
		}
		name, ok := m.Params.ToolName()
		if m.paramsRead != c.paramsRead || (m.MethodName() == "tools/call") != c.toolCall || name != c.name || ok != c.nameOK {
			t.Errorf("%s: paramsRead %v, tools/call %v, name %q %v; want %v %v %q %v", c.body,
				m.paramsRead, (m.MethodName() == "tools/call"), name, ok, c.paramsRead, c.toolCall, c.name, c.nameOK)
		}
	}
}
