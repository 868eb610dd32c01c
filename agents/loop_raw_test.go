package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// jsonDown is a Downstream that takes arguments as JSON (CallToolJSON, as
// *mcpclient.Manager does). Both of its calls record what they were sent.
type jsonDown struct {
	*fakeDown
	mu   sync.Mutex
	sent []string // "json <arguments>" or "typed <arguments map>"
}

func newJSONDown() *jsonDown {
	d := &jsonDown{}
	d.fakeDown = &fakeDown{tools: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}},
		call: func(_ context.Context, _, _ string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
			d.record(fmt.Sprintf("typed %v", args))
			return mcpgo.NewToolResultText("typed result"), nil
		}}
	return d
}

func (d *jsonDown) record(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, s)
}

func (d *jsonDown) CallToolJSON(_ context.Context, _, _ string, args json.RawMessage, _ http.Header, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
	d.record("json " + string(args))
	if onProgress != nil {
		onProgress(1, nil, "halfway")
	}
	return mcpgo.NewToolResultText("result of " + string(args)), nil
}

// The tool loop hands a downstream that takes JSON arguments the model's
// arguments as they are (P17), and any other one a decoded map.
func TestToolLoopSendsArgumentsAsJSON(t *testing.T) {
	down := newJSONDown()
	ta := newTestAgentsWith(t, sendFastConfig, down, map[string]llm.Provider{"openai": &scriptLLM{entered: make(chan string, 16)}})
	x := sendTo(t, ta, "talk", sendBody("1", "send_message", `{"message":"tool please"}`, `"progressToken":"p1"`), legacySSE)
	if !strings.Contains(x.body, `the tool said: result of {\"q\":1}`) {
		t.Errorf("answered %s", x)
	}
	if !strings.Contains(x.body, "files/text: halfway") {
		t.Errorf("the downstream's progress was not relayed: %s", x)
	}
	down.mu.Lock()
	if want := []string{`json {"q":1}`}; !reflect.DeepEqual(down.sent, want) {
		t.Errorf("downstream was sent %q, want %q", down.sent, want)
	}
	down.mu.Unlock()

	typed := newJSONDown()
	ta = newTestAgentsWith(t, sendFastConfig, typed.fakeDown, map[string]llm.Provider{"openai": &scriptLLM{entered: make(chan string, 16)}})
	x = sendTo(t, ta, "talk", sendBody("2", "send_message", `{"message":"tool please"}`, ""), legacySSE)
	if !strings.Contains(x.body, "the tool said: typed result") {
		t.Errorf("answered %s", x)
	}
	typed.mu.Lock()
	defer typed.mu.Unlock()
	if want := []string{"typed map[q:1]"}; !reflect.DeepEqual(typed.sent, want) {
		t.Errorf("downstream was sent %q, want %q", typed.sent, want)
	}
}

func TestObjectArguments(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{``, ``, ``},
		{`  `, ``, ``},
		{`null`, ``, ``},
		{` {"b":1,"a":[2]} `, `{"b":1,"a":[2]}`, ``}, // as sent: order kept
		{`{"n":12345678901234567890}`, `{"n":12345678901234567890}`, ``},
		{"{\"s\":\"\xff\"}", `{"s":"` + "\ufffd" + `"}`, ``}, // invalid UTF-8: as encoding/json reads it
		{"\v{}", ``, `invalid character`},                    // not JSON white space
		{`[1]`, ``, `cannot unmarshal array`},
		{`"x"`, ``, `cannot unmarshal string`},
		{`{"a":}`, ``, `invalid character`},
		{`{"a":1} {}`, ``, `invalid character`},
	} {
		got, err := objectArguments(json.RawMessage(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("objectArguments(%q): error %v, want one with %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("objectArguments(%q): %v", tc.in, err)
		case tc.err == "" && string(got) != tc.want:
			t.Errorf("objectArguments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
