package endpoint_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// sendPair is agenttest.SendConfig served twice: with the fast path, and with
// every call through mcp-go (the reference).
type sendPair struct {
	fast, slow       *agenttest.Agents
	fastLLM, slowLLM *agenttest.ScriptLLM
}

func newSendPair(t *testing.T) *sendPair {
	t.Helper()
	p := &sendPair{}
	for _, slow := range []bool{false, true} {
		down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}},
			Call: func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
				return mcpgo.NewToolResultText("hi <b>&</b>"), nil
			}}
		script := agenttest.NewScriptLLM()
		ta := agenttest.NewWith(t, agenttest.SendConfig, down, map[string]llm.Provider{"openai": script})
		if slow {
			ta.ThroughMCPGo()
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
	before := len(p.fastLLM.Paths())
	got, want := p.fast.Send(t, agent, body, hdr), p.slow.Send(t, agent, body, hdr)
	if agent == "fan" { // its sub-agents run at once: their progress interleaves at random
		got.Body, want.Body = unordered(got.Body), unordered(want.Body)
	}
	if !sameExchange(got, want) {
		t.Errorf("fast path differs from mcp-go:\nfast:   %s\nmcp-go: %s", got, want)
	}
	paths := p.fastLLM.Paths()[before:]
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
	got, want := p.fast.Send(t, "talk", body, hdr), p.slow.Send(t, "talk", body, hdr)
	gm, wm := messages(got.Body), messages(want.Body)
	if got.Status != want.Status || got.Headers != want.Headers || len(gm) != 2 || len(wm) == 0 ||
		!reflect.DeepEqual(gm[1], wm[len(wm)-1]) || !strings.Contains(got.Body, `"message":"talk step 1 (llm)"`) {
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

func TestSendMessageFastMatchesMCPGo(t *testing.T) {
	agenttest.NeedFast(t)
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
							p.comparePanic(t, agenttest.SendBody("7", tool, a, meta), s.hdr(tool))
							return
						}
						via := p.compare(t, agent, agenttest.SendBody("7", tool, a, meta), s.hdr(tool))
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
			if via := p.compare(t, "talk", agenttest.SendBody(id, "send_message", args["plain"], ""), legacySSE); via != "fast" {
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
		{"another tool's name", "talk", agenttest.SendBody("1", "ask", plain, ""), legacySSE, "none"},
		{"get_health", "talk", agenttest.SendBody("1", "get_health", `{}`, ""), legacySSE, "none"},
		{"content type", "talk", agenttest.SendBody("1", "send_message", plain, ""), with(legacySSE, "Content-Type", "text/plain"), "none"},
		{"task", "talk", strings.Replace(agenttest.SendBody("1", "send_message", plain, ""), `"name"`, `"task":{"ttl":5},"name"`, 1), legacySSE, "mcp-go"},
		{"2026-07-28 without Mcp-Name", "talk", agenttest.SendBody("1", "send_message", plain, modernMeta), modern, "none"},
		{"2026-07-28 without capabilities", "talk", agenttest.SendBody("1", "send_message", plain, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), modernSend, "none"},
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
	agenttest.NeedFast(t)
	p := newSendPair(t)
	for _, side := range []struct {
		ta     *agenttest.Agents
		script *agenttest.ScriptLLM
	}{{p.fast, p.fastLLM}, {p.slow, p.slowLLM}} {
		answer := make(chan agenttest.Exchange, 1)
		go func() {
			answer <- side.ta.Send(t, "talk", agenttest.SendBody("7", "send_message", `{"message":"block"}`, ""), legacySSE)
		}()
		<-side.script.Entered
		cancelMsg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`
		if x := side.ta.Send(t, "talk", cancelMsg, legacySSE); x.Status != 202 {
			t.Errorf("cancel answered %s", x)
		}
		x := <-answer
		if x.Status != 200 || !strings.Contains(x.Body, "context canceled (request id rid-1)") {
			t.Errorf("cancelled call answered %s", x)
		}
	}
	if got := p.fastLLM.Paths(); len(got) != 1 || got[0] != "fast" {
		t.Errorf("model turns on the fast side: %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", p.fast.Srv.URL+"/talk",
		strings.NewReader(agenttest.SendBody("8", "send_message", `{"message":"block"}`, "")))
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
	<-p.fastLLM.Entered
	cancel()
	<-done
	waitFor(t, "the disconnected call to end as canceled", func() bool {
		return agenttest.CounterValue(p.fast.Metrics.ToolCalls.WithLabelValues("talk", "send_message", "canceled", "other")) == 2
	})
	noTrackedCalls(t, p.fast)
}
