package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// SendConfig has an agent of every kind with a send_message: llm agents on
// the model "openai.script" (a ScriptLLM under provider key "openai") with
// the tools of server files, and a chain, a router and a parallel agent
// over them.
const SendConfig = `
name: unit
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1", api_key: "sk-unit"}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
agents:
  talk: {model: openai.script, title: Talk, description: "talks <b>&</b>", servers: [files]}
  named: {model: openai.script, tool_name: ask, servers: [files]}
  pipe: {kind: chain, sequence: [talk, talk]}
  pick: {kind: router, model: openai.script, agents: [talk, named]}
  fan: {kind: parallel, fan_out: [talk, named], fan_in: talk}
`

// ScriptLLM answers by the last user message: "tool …" calls files__text
// once, then answers with its result; "two tools" calls it twice in one
// turn; "fail" fails; "panic" panics; "block" waits for the end of the
// call; anything else is echoed. It logs whether each turn ran inside
// mcp-go's server (its session in the context) or on the fast path, and
// offers each turn's user message on Entered when there is room.
type ScriptLLM struct {
	mu      sync.Mutex
	via     []string
	Entered chan string
}

// NewScriptLLM returns a ScriptLLM whose Entered holds 16 messages.
func NewScriptLLM() *ScriptLLM { return &ScriptLLM{Entered: make(chan string, 16)} }

func (*ScriptLLM) Name() string                            { return "openai" }
func (*ScriptLLM) Preflight(context.Context, string) error { return nil }

func (s *ScriptLLM) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	path := "fast"
	if server.ClientSessionFromContext(ctx) != nil {
		path = "mcp-go"
	}
	s.mu.Lock()
	s.via = append(s.via, path)
	s.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	user := lastUserMessage(req.Messages)
	select {
	case s.Entered <- user:
	default:
	}
	switch {
	case last.Role == llm.RoleTool:
		return &llm.Response{Text: "the tool said: " + last.Text, FinishReason: "stop"}, nil
	case strings.HasPrefix(user, "tool"):
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "files__text", Arguments: json.RawMessage(`{"q":1}`)}},
			FinishReason: "tool_calls"}, nil
	case user == "two tools": // run on goroutines of their own (loop.go runTools)
		return &llm.Response{ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "files__text", Arguments: json.RawMessage(`{"q":1}`)},
			{ID: "c2", Name: "files__text", Arguments: json.RawMessage(`{"q":2}`)}},
			FinishReason: "tool_calls"}, nil
	case user == "fail":
		return nil, errors.New("scripted failure")
	case user == "panic":
		panic("llm bug")
	case user == "block":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &llm.Response{Text: "you said: " + user, FinishReason: "stop"}, nil
}

func lastUserMessage(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// Paths lists where each turn ran so far: "fast" or "mcp-go".
func (s *ScriptLLM) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.via...)
}

// Exchange is what a caller sees of one response.
type Exchange struct {
	Status  int
	Headers string // the headers that matter to a caller, "Name=value ..."
	Body    string
}

func (x Exchange) String() string { return fmt.Sprintf("HTTP %d %s\n%s", x.Status, x.Headers, x.Body) }

// Post posts body to agent as caller "bob" with exactly hdr besides, and
// returns the response with its body read.
func (ta *Agents) Post(t *testing.T, agent, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ta.Srv.URL+"/"+agent, strings.NewReader(body))
	req.Header.Set("X-Test-Caller", "bob")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Send is Post that returns what a caller sees of the response.
func (ta *Agents) Send(t *testing.T, agent, body string, hdr map[string]string) Exchange {
	t.Helper()
	resp, b := ta.Post(t, agent, body, hdr)
	var h []string
	for _, k := range []string{"Content-Type", "Cache-Control", "Connection", "X-Accel-Buffering", "Mcp-Session-Id", "Content-Length"} {
		h = append(h, k+"="+resp.Header.Get(k))
	}
	h = append(h, fmt.Sprintf("chunked=%v", len(resp.TransferEncoding) > 0))
	return Exchange{resp.StatusCode, strings.Join(h, " "), b}
}

// LegacySSE are the headers of a session-based caller that takes SSE.
var LegacySSE = map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
	"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "pgw-0123"}

// SendBody is a tools/call of tool with id, arguments args and the inside
// of _meta.
func SendBody(id, tool, args, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s}}}`,
		id, tool, args, meta)
}
