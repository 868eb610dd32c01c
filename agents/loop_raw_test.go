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

// loopDown is a Downstream with raw results for the tool loop (P17):
// CallToolRaw answers with raw, as a downstream sent it, and CallTool
// (mcp-go's path) with a typed text result. Both record what they were sent.
type loopDown struct {
	*fakeDown
	raw  string
	mu   sync.Mutex
	sent []string // "raw <arguments JSON>" or "typed <arguments map>"
}

func newLoopDown(raw string) *loopDown {
	d := &loopDown{raw: raw}
	d.fakeDown = &fakeDown{tools: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}},
		call: func(_ context.Context, _, _ string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
			d.record(fmt.Sprintf("typed %v", args))
			return mcpgo.NewToolResultText("answered through mcp-go"), nil
		}}
	return d
}

func (d *loopDown) record(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, s)
}

func (d *loopDown) CallToolRaw(_ context.Context, _, _ string, args json.RawMessage, _ http.Header, onProgress mcpclient.ProgressFunc) (*mcpclient.RawResult, error) {
	d.record("raw " + string(args))
	if onProgress != nil {
		onProgress(1, nil, "halfway")
	}
	var peek struct {
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal([]byte(d.raw), &peek); err != nil {
		return nil, err
	}
	return &mcpclient.RawResult{JSON: json.RawMessage(d.raw), IsError: peek.IsError, ResultType: peek.ResultType}, nil
}

// The tool loop calls downstream tools on the raw path when the Downstream
// offers it, decodes the result as mcp-go's client would, and asks again
// through mcp-go's client when the result asks for input.
func TestToolLoopRawPath(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		answer    string   // in the answer to send_message
		sent      []string // what the downstream was sent, in order
	}{
		{"text and an image, an unknown member",
			`{"zeta":1,"content":[{"type":"text","text":"from the raw path"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
			"the tool said: from the raw path", []string{`raw {"q":1}`}},
		{"a tool error",
			`{"isError":true,"content":[{"type":"text","text":"bad input"}]}`,
			"the tool said: bad input", []string{`raw {"q":1}`}},
		{"asks for input: again through mcp-go's client",
			`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"?"}}}}`,
			"the tool said: answered through mcp-go", []string{`raw {"q":1}`, "typed map[q:1]"}},
		{"a result mcp-go's client refuses",
			`{"isError":true}`,
			"the tool said: tool files__text failed: the downstream's result: content is missing", []string{`raw {"q":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			down := newLoopDown(tc.raw)
			ta := newTestAgentsWith(t, sendFastConfig, down, map[string]llm.Provider{"openai": &scriptLLM{entered: make(chan string, 16)}})
			x := sendTo(t, ta, "talk", sendBody("1", "send_message", `{"message":"tool please"}`, `"progressToken":"p1"`), legacySSE)
			if !strings.Contains(x.body, tc.answer) {
				t.Errorf("answered %s, want %q in it", x, tc.answer)
			}
			if !strings.Contains(x.body, "files/text: halfway") {
				t.Errorf("the downstream's progress was not relayed: %s", x)
			}
			down.mu.Lock()
			defer down.mu.Unlock()
			if !reflect.DeepEqual(down.sent, tc.sent) {
				t.Errorf("downstream was sent %q, want %q", down.sent, tc.sent)
			}
		})
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
