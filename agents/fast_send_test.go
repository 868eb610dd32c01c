package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

const sendFastConfig = `
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

// scriptLLM answers by the last user message: "tool …" calls files__text
// once, then answers with its result; "fail" fails; "panic" panics;
// "block" waits for the end of the call; anything else is echoed. It logs
// whether each turn ran inside mcp-go's server (its session in the
// context) or on the fast path.
type scriptLLM struct {
	mu      sync.Mutex
	via     []string
	entered chan string
}

func (*scriptLLM) Name() string                            { return "openai" }
func (*scriptLLM) Preflight(context.Context, string) error { return nil }

func (s *scriptLLM) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
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
	case s.entered <- user:
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

func (s *scriptLLM) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.via...)
}

// sendPair is sendFastConfig served twice: with the fast path, and with
// every call through mcp-go (the reference).
type sendPair struct {
	fast, slow       *testAgents
	fastLLM, slowLLM *scriptLLM
}

func newSendPair(t *testing.T) *sendPair {
	t.Helper()
	p := &sendPair{}
	for _, slow := range []bool{false, true} {
		down := &fakeDown{tools: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}},
			call: func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("hi <b>&</b>"), nil
			}}
		script := &scriptLLM{entered: make(chan string, 16)}
		ta := newTestAgentsWith(t, sendFastConfig, down, map[string]llm.Provider{"openai": script})
		for _, name := range []string{"talk", "named", "pipe", "pick", "fan"} {
			ta.set.Get(name).handler.fastOff = slow
		}
		if slow {
			p.slow, p.slowLLM = ta, script
		} else {
			p.fast, p.fastLLM = ta, script
		}
	}
	return p
}

// compare sends the same request to agent on both sides and fails unless
// the caller sees the same response; it returns the paths the fast side's
// model turns took (none when the model was not called).
func (p *sendPair) compare(t *testing.T, agent, body string, hdr map[string]string) string {
	t.Helper()
	before := len(p.fastLLM.paths())
	got, want := sendTo(t, p.fast, agent, body, hdr), sendTo(t, p.slow, agent, body, hdr)
	if agent == "fan" { // its sub-agents run at once: their progress interleaves at random
		got.body, want.body = unordered(got.body), unordered(want.body)
	}
	if !sameExchange(got, want) {
		t.Errorf("fast path differs from mcp-go:\nfast:   %s\nmcp-go: %s", got, want)
	}
	paths := p.fastLLM.paths()[before:]
	if len(paths) == 0 {
		return "none"
	}
	for _, v := range paths {
		if v != paths[0] {
			return "mixed"
		}
	}
	return paths[0]
}

// comparePanic is compare for a call of talk whose model panics after a
// notification: the fast path writes the notification, then the error
// mcp-go answers.
func (p *sendPair) comparePanic(t *testing.T, body string, hdr map[string]string) {
	t.Helper()
	got, want := sendTo(t, p.fast, "talk", body, hdr), sendTo(t, p.slow, "talk", body, hdr)
	gm, wm := messages(got.body), messages(want.body)
	if got.status != want.status || got.headers != want.headers || len(gm) != 2 || len(wm) == 0 ||
		!reflect.DeepEqual(gm[1], wm[len(wm)-1]) || !strings.Contains(got.body, `"message":"talk step 1 (llm)"`) {
		t.Errorf("want the notification, then mcp-go's error:\nfast:   %s\nmcp-go: %s", got, want)
	}
}

var progressNumber = regexp.MustCompile(`"progress":\d+,`)

// unordered is an SSE body with its events sorted and the progress numbers
// of its notifications removed.
func unordered(body string) string {
	if !strings.HasPrefix(body, "event:") {
		return body
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	for i, ev := range events {
		events[i] = progressNumber.ReplaceAllString(ev, "")
	}
	sort.Strings(events)
	return strings.Join(events, "\n\n") + "\n\n"
}

// sendBody is a tools/call of tool with id, arguments args and the inside
// of _meta.
func sendBody(id, tool, args, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%s}}}`,
		id, tool, args, meta)
}

func TestSendMessageFastMatchesMCPGo(t *testing.T) {
	p := newSendPair(t)
	args := map[string]string{
		"plain":         `{"message":"hello <b>"}`,
		"tool call":     `{"message":"tool please","conversation_id":"c-9"}`,
		"history":       `{"message":"again","history":[{"role":"user","content":"one"},{"role":"assistant","content":"two"}]}`,
		"model fails":   `{"message":"fail"}`,
		"model panics":  `{"message":"panic"}`,
		"no message":    `{"history":[]}`,
		"bad history":   `{"message":"x","history":[{"role":"robot","content":"?"},{"role":"user"}]}`,
		"bad image":     `{"message":"x","images":[{"data":"not base64!","mime_type":"image/png"}]}`,
		"args not obj":  `"just text"`,
		"args null":     `null`,
		"unknown field": `{"message":"x","extra":[1,2]}`,
	}
	for _, s := range callerStyles {
		for _, agent := range []string{"talk", "named", "pipe", "pick", "fan"} {
			tool := "send_message"
			if agent == "named" {
				tool = "ask"
			}
			for name, a := range args {
				if agent != "talk" && name != "plain" && name != "tool call" && name != "model fails" {
					continue
				}
				for _, progress := range []bool{false, true} {
					meta := s.meta
					if progress {
						meta = strings.TrimPrefix(meta+`,"progressToken":"tok"`, ",")
					}
					t.Run(fmt.Sprintf("%s/%s/%s/progress=%v", s.name, agent, name, progress), func(t *testing.T) {
						if name == "model panics" && progress {
							// A panicking handler skips its flush, and mcp-go
							// then drops notifications still in its buffer
							// (at random); the fast path writes them.
							p.comparePanic(t, sendBody("7", tool, a, meta), s.hdr(tool))
							return
						}
						via := p.compare(t, agent, sendBody("7", tool, a, meta), s.hdr(tool))
						if via != "fast" && via != "none" {
							t.Errorf("the model ran through %s, want the fast path", via)
						}
					})
				}
			}
		}
	}
	t.Run("ids", func(t *testing.T) {
		for _, id := range []string{`"x-1"`, `12345678901234567890`, `1.50`, `-3`} {
			if via := p.compare(t, "talk", sendBody(id, "send_message", args["plain"], ""), legacySSE); via != "fast" {
				t.Errorf("id %s: the model ran through %s", id, via)
			}
		}
	})
}

// Requests the fast path leaves to mcp-go.
func TestSendMessageFastFallsBack(t *testing.T) {
	p := newSendPair(t)
	plain := `{"message":"hello"}`
	modernSend := with(modern, "Mcp-Name", "send_message")
	for _, c := range []struct {
		name, agent, body string
		hdr               map[string]string
		via               string // where the model ran; "none" when mcp-go refused the request
	}{
		{"another tool's name", "talk", sendBody("1", "ask", plain, ""), legacySSE, "none"},
		{"get_health", "talk", sendBody("1", "get_health", `{}`, ""), legacySSE, "none"},
		{"content type", "talk", sendBody("1", "send_message", plain, ""), with(legacySSE, "Content-Type", "text/plain"), "none"},
		{"task", "talk", strings.Replace(sendBody("1", "send_message", plain, ""), `"name"`, `"task":{"ttl":5},"name"`, 1), legacySSE, "mcp-go"},
		{"2026-07-28 without Mcp-Name", "talk", sendBody("1", "send_message", plain, modernMeta), modern, "none"},
		{"2026-07-28 without capabilities", "talk", sendBody("1", "send_message", plain, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), modernSend, "none"},
		{"params twice", "talk", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message"},"params":{"arguments":{}}}`, legacySSE, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if via := p.compare(t, c.agent, c.body, c.hdr); via != c.via {
				t.Errorf("the model ran through %s, want %s", via, c.via)
			}
		})
	}
}

// A session-based caller's notifications/cancelled ends its fast
// send_message, which then answers as mcp-go would; so does closing the
// connection.
func TestSendMessageFastCancel(t *testing.T) {
	p := newSendPair(t)
	for _, side := range []struct {
		ta     *testAgents
		script *scriptLLM
	}{{p.fast, p.fastLLM}, {p.slow, p.slowLLM}} {
		answer := make(chan exchange, 1)
		go func() {
			answer <- sendTo(t, side.ta, "talk", sendBody("7", "send_message", `{"message":"block"}`, ""), legacySSE)
		}()
		<-side.script.entered
		cancelMsg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`
		if x := sendTo(t, side.ta, "talk", cancelMsg, legacySSE); x.status != 202 {
			t.Errorf("cancel answered %s", x)
		}
		x := <-answer
		if x.status != 200 || !strings.Contains(x.body, "context canceled (request id rid-1)") {
			t.Errorf("cancelled call answered %s", x)
		}
	}
	if got := p.fastLLM.paths(); len(got) != 1 || got[0] != "fast" {
		t.Errorf("model turns on the fast side: %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", p.fast.srv.URL+"/talk",
		strings.NewReader(sendBody("8", "send_message", `{"message":"block"}`, "")))
	for k, v := range legacySSE {
		req.Header.Set(k, v)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-p.fastLLM.entered
	cancel()
	<-done
	waitFor(t, "the disconnected call to end as canceled", func() bool {
		return counterValue(p.fast.metrics.ToolCalls.WithLabelValues("talk", "send_message", "canceled")) == 2
	})
	noTrackedCalls(t, p.fast)
}

// The fast path does not check Mcp-Param-* headers: it relies on the
// send_message schema binding none (agents/fastcall).
func TestSendMessageSchemaHasNoHeaderBindings(t *testing.T) {
	p := newSendPair(t)
	for name, st := range p.fast.set.Get("talk").mcp.ListTools() {
		if b := mcpgo.ExtractParamHeaderBindings(&st.Tool); len(b) != 0 {
			t.Errorf("%s binds headers %v", name, b)
		}
	}
}

// A panic on a goroutine a call starts (a parallel agent's fan-out, an llm
// agent's tool call) fails that part of the call instead of the process.
func TestPanicOnACallsGoroutineIsAnError(t *testing.T) {
	p := newSendPair(t)
	x := sendTo(t, p.fast, "fan", sendBody("1", "send_message", `{"message":"panic"}`, ""), legacySSE)
	if !strings.Contains(x.body, "every fan_out agent failed: internal error in agent talk (request id rid-1)") {
		t.Errorf("fan-out of panicking agents answered %s", x)
	}

	down := &fakeDown{tools: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}},
		call: func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
			panic("downstream client bug")
		}}
	ta := newTestAgentsWith(t, sendFastConfig, down, map[string]llm.Provider{"openai": &scriptLLM{entered: make(chan string, 16)}})
	x = sendTo(t, ta, "talk", sendBody("2", "send_message", `{"message":"tool please"}`, ""), legacySSE)
	if !strings.Contains(x.body, "the tool said: internal error in tool call files__text") {
		t.Errorf("a panicking tool call answered %s", x)
	}
	x = sendTo(t, ta, "talk", sendBody("3", "send_message", `{"message":"two tools"}`, ""), legacySSE)
	if !strings.Contains(x.body, "the tool said: internal error in tool call files__text") {
		t.Errorf("two panicking tool calls in one turn answered %s", x)
	}
}

// An agent without a send_message (config validation refuses one as a
// sub-agent) fails a call instead of panicking.
func TestRunWithoutSendMessage(t *testing.T) {
	ta := newTestAgents(t, proxyOneServer, oneServerDown())
	_, err := ta.set.Get("px").Run(context.Background(), &Call{Turn: Turn{Message: "hi"}})
	if err == nil || !strings.Contains(err.Error(), "agent px is kind proxy, which has no send_message") {
		t.Errorf("Run of a proxy agent: %v", err)
	}
}

// panickyProbe is a Downstream whose health probe panics.
type panickyProbe struct{ *fakeDown }

func (panickyProbe) Probe(context.Context, string, http.Header) error { panic("probe bug") }

// A panic in a health probe degrades the agent's health instead of ending
// the process.
func TestPanicInAHealthProbe(t *testing.T) {
	down := panickyProbe{&fakeDown{tools: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}}}}
	ta := newTestAgentsWith(t, sendFastConfig, down, map[string]llm.Provider{"openai": &scriptLLM{entered: make(chan string, 16)}})
	x := sendTo(t, ta, "talk", sendBody("1", "get_health", `{}`, ""), legacySSE)
	if !strings.Contains(x.body, "internal error in the probe of server files") || !strings.Contains(x.body, "degraded") {
		t.Errorf("get_health answered %s", x)
	}
}
