package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

const proxyFastConfig = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
policy:
  callers:
    alice: {tools: {deny: ["files__text"]}}
agents:
  px: {kind: proxy, title: Files, description: "files, proxied", servers: [files]}
`

// fastTools are the downstream's tools: each answers in its own way (see
// fastResult).
var fastTools = []string{"text", "image", "is_error", "structured", "meta", "rpc_error", "url_elicit",
	"unreachable", "no_result", "panics", "progress", "burst", "logs", "input_required", "block"}

// burstSize is more progress than the per-request buffers (100) hold.
const burstSize = 350

// fastResult is the downstream's answer to tool, made afresh per call (a
// 2026-07-28 answer is decorated in place, by mcp-go as by the fast path).
func fastResult(ctx context.Context, tool string, onProgress mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
	switch tool {
	case "text":
		return mcpgo.NewToolResultText("hi <b>&</b>"), nil
	case "image":
		img := mcpgo.NewImageContent("iVBORw0KGgo=", "image/png")
		img.Meta = mcpgo.NewMetaFromMap(map[string]any{"k": "v"})
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{img, mcpgo.NewAudioContent("UklGRg==", "audio/wav")}}, nil
	case "is_error":
		return mcpgo.NewToolResultError("it failed"), nil
	case "structured":
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent("{}")},
			StructuredContent: map[string]any{"n": 3.0, "list": []any{"a", nil}}}, nil
	case "meta":
		return &mcpgo.CallToolResult{Result: mcpgo.Result{Meta: mcpgo.NewMetaFromMap(map[string]any{"trace": "abc",
			mcpgo.MetaKeyServerInfo: map[string]any{"name": "down", "version": "9"}})},
			Content: []mcpgo.Content{mcpgo.NewTextContent("m")}}, nil
	case "rpc_error":
		return nil, fmt.Errorf("downstream %q: tools/call: %w", "files", mcpgo.ErrInvalidParams)
	case "url_elicit":
		return nil, mcpgo.URLElicitationRequiredError{Elicitations: []mcpgo.ElicitationParams{{Mode: "url", Message: "log in",
			URL: "https://example.com/login", ElicitationID: "e1"}}}
	case "unreachable":
		return nil, fmt.Errorf("downstream %q: %w", "files", mcpclient.ErrUnavailable)
	case "no_result":
		return nil, nil
	case "panics":
		panic("downstream bug")
	case "progress":
		if onProgress != nil {
			ten := 10.0
			onProgress(1, &ten, "one")
			onProgress(1, nil, "again")
			onProgress(10, &ten, "")
		}
		return mcpgo.NewToolResultText("progressed"), nil
	case "burst":
		for i := 1; onProgress != nil && i <= burstSize; i++ {
			onProgress(float64(i), nil, fmt.Sprintf("m%d", i))
		}
		return mcpgo.NewToolResultText("burst done"), nil
	case "logs":
		if rel != nil && rel.Log != nil {
			rel.Log(map[string]any{"level": "info", "logger": "l", "data": "first", "_meta": map[string]any{"x": 1}})
			rel.Log(map[string]any{"level": "debug", "data": map[string]any{"n": 2.0}})
		}
		return mcpgo.NewToolResultText("logged"), nil
	case "input_required":
		return &mcpgo.CallToolResult{Result: mcpgo.Result{ResultType: mcpgo.ResultTypeInputRequired}}, nil
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("no such tool")
}

// fastPair is the proxy agent of proxyFastConfig served twice over
// downstreams that answer alike: with the fast path, whose downstream gives
// raw results (rawFakeDown), and with every call through mcp-go and typed
// results (the reference).
type fastPair struct {
	fast, slow *agenttest.Agents
	via        map[*agenttest.Agents]*viaLog
	down       map[*agenttest.Agents]*agenttest.FakeDown
}

// viaLog records, per tool called, whether the call ran inside mcp-go's
// server (its session in the context) or on the fast path; entered, when
// set, hears of each call as it starts.
type viaLog struct {
	mu      sync.Mutex
	calls   []string // "tool mcp-go" or "tool fast"
	entered chan string
}

func (v *viaLog) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.calls) == 0 {
		return "none"
	}
	return v.calls[len(v.calls)-1]
}

func (v *viaLog) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.calls)
}

func newFastPair(t *testing.T) *fastPair {
	t.Helper()
	p := &fastPair{via: map[*agenttest.Agents]*viaLog{}, down: map[*agenttest.Agents]*agenttest.FakeDown{}}
	for _, slow := range []bool{false, true} {
		v := &viaLog{entered: make(chan string, 16)}
		down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": nil}}
		for _, n := range fastTools {
			down.ToolLists["files"] = append(down.ToolLists["files"], mcpgo.NewTool(n))
		}
		down.Relayed = func(ctx context.Context, _, tool string, _ map[string]any, onProgress mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
			path := "fast"
			if server.ClientSessionFromContext(ctx) != nil {
				path = "mcp-go"
			}
			v.mu.Lock()
			v.calls = append(v.calls, tool+" "+path)
			v.mu.Unlock()
			select {
			case v.entered <- tool:
			default:
			}
			return fastResult(ctx, tool, onProgress, rel)
		}
		var d mcpclient.Downstream = down
		if !slow {
			d = rawFakeDown{down} // the fast path passes results through as raw JSON
		}
		ta := agenttest.New(t, proxyFastConfig, d)
		p.via[ta], p.down[ta] = v, down
		if slow {
			ta.ThroughMCPGo()
			p.slow = ta
		} else {
			p.fast = ta
		}
	}
	return p
}

// listTools makes both agents register the downstream's tools.
func (p *fastPair) listTools(t *testing.T) {
	t.Helper()
	for _, ta := range []*agenttest.Agents{p.fast, p.slow} {
		if resp, body := post(t, ta, "px", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); resp.StatusCode != 200 {
			t.Fatalf("tools/list: HTTP %d %s", resp.StatusCode, body)
		}
	}
}

// send posts body to the proxy agent with exactly hdr (and the test
// caller) and returns what came back.
func send(t *testing.T, ta *agenttest.Agents, body string, hdr map[string]string) agenttest.Exchange {
	t.Helper()
	return ta.Send(t, "px", body, hdr)
}

// Protocol styles a caller may use.
var (
	legacySSE  = agenttest.LegacySSE
	legacyJSON = map[string]string{"Content-Type": "application/json; charset=utf-8", "Accept": "application/json"}
	modern     = map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
)

// callerStyles are the protocol styles of a tools/call: the headers for a
// call of tool, and the inside of its _meta.
var callerStyles = []struct {
	name string
	hdr  func(tool string) map[string]string
	meta string
}{
	{"session-based, SSE", func(string) map[string]string { return legacySSE }, ""},
	{"session-based, JSON only, no version", func(string) map[string]string { return legacyJSON }, ""},
	{"2026-07-28", func(tool string) map[string]string { return with(modern, "Mcp-Name", tool) }, modernMeta},
	{"2026-07-28 at level debug", func(tool string) map[string]string { return with(modern, "Mcp-Name", tool) },
		modernMeta + `,"io.modelcontextprotocol/logLevel":"debug"`},
}

const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`

// callBody is a tools/call of tool with id; meta is the inside of _meta.
func callBody(id, tool, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"a":1,"big":12345678901234567890},"_meta":{%s}}}`,
		id, tool, meta)
}

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// compare sends the same request to both agents and fails unless the
// caller sees the same response (sameExchange: the same bytes, or for a
// decorated 2026-07-28 result the same JSON); it returns the path the fast agent's call
// took ("none" when the downstream was not called).
func (p *fastPair) compare(t *testing.T, body string, hdr map[string]string) string {
	t.Helper()
	before := p.via[p.fast].count()
	got, want := send(t, p.fast, body, hdr), send(t, p.slow, body, hdr)
	if !sameExchange(got, want) {
		t.Errorf("fast path differs from mcp-go:\nfast:   %s\nmcp-go: %s", got, want)
	}
	if p.via[p.fast].count() == before {
		return "none"
	}
	return strings.Fields(p.via[p.fast].last())[1]
}

func TestProxyFastMatchesMCPGo(t *testing.T) {
	agenttest.NeedFast(t)
	p := newFastPair(t)
	p.listTools(t)
	for _, s := range callerStyles {
		for _, tool := range fastTools {
			if tool == "block" {
				continue
			}
			t.Run(s.name+"/"+tool, func(t *testing.T) {
				meta := s.meta
				if tool == "progress" || tool == "burst" {
					meta = strings.TrimPrefix(meta+`,"progressToken":"tok"`, ",")
				}
				if via := p.compare(t, callBody("7", tool, meta), s.hdr(tool)); via != "fast" {
					t.Errorf("the call went through %s, want the fast path", via)
				}
			})
		}
	}
	t.Run("ids", func(t *testing.T) {
		for _, id := range []string{`"x-1"`, `12345678901234567890`, `1.50`, `-3`} {
			if via := p.compare(t, callBody(id, "text", ""), legacySSE); via != "fast" {
				t.Errorf("id %s: the call went through %s", id, via)
			}
		}
	})
	t.Run("denied", func(t *testing.T) {
		for _, hdr := range []map[string]string{legacySSE, with(modern, "Mcp-Name", "text")} {
			hdr = with(hdr, "X-Test-Caller", "alice")
			before := agenttest.CounterValue(p.fast.Metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied", "other"))
			meta := ""
			if hdr["Mcp-Method"] != "" {
				meta = modernMeta
			}
			got, want := send(t, p.fast, callBody("8", "text", meta), hdr), send(t, p.slow, callBody("8", "text", meta), hdr)
			if !sameExchange(got, want) || !strings.Contains(got.Body, "denied by policy") {
				t.Errorf("denied call:\nfast:   %s\nmcp-go: %s", got, want)
			}
			if after := agenttest.CounterValue(p.fast.Metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied", "other")); after != before+1 {
				t.Errorf("policy decisions deny/tool_denied %v → %v, want one more", before, after)
			}
		}
	})
}

// Requests the fast path must leave to mcp-go: the caller sees what mcp-go
// answers, and the call (if any) runs inside mcp-go.
func TestProxyFastFallsBack(t *testing.T) {
	agenttest.NeedFast(t)
	p := newFastPair(t)
	t.Run("a name not registered yet", func(t *testing.T) {
		// The endpoint registers it first (ToolEnsurer), so that even the
		// first call of a tool takes the fast path (a large result of it is
		// then passed through, not held by mcp-go).
		for _, id := range []string{"1", "2"} {
			if via := p.compare(t, callBody(id, "text", ""), legacySSE); via != "fast" {
				t.Errorf("call %s went through %s, want the fast path", id, via)
			}
		}
	})
	p.listTools(t)
	modernText := with(modern, "Mcp-Name", "text")
	for _, c := range []struct {
		name, body string
		hdr        map[string]string
		via        string // where the downstream call ran; "none" when mcp-go refused the request
	}{
		{"unknown tool", callBody("1", "nope", ""), legacySSE, "none"},
		{"get_health", callBody("1", "get_health", ""), legacySSE, "none"},
		// Server-to-client requests go on the fast path's own stream.
		{"caller declared elicitation, sampling and roots", callBody("1", "text", ""), with(legacySSE, "Mcp-Session-Id", "pgw-esr-0123"), "fast"},
		{"content type", callBody("1", "text", ""), with(legacySSE, "Content-Type", "text/plain"), "none"},
		{"unknown version", callBody("1", "text", ""), with(legacySSE, "MCP-Protocol-Version", "1999-01-01"), "none"},
		{"a result member", strings.Replace(callBody("1", "text", ""), `"method"`, `"result":{},"method"`, 1), legacySSE, "none"},
		{"task", strings.Replace(callBody("1", "text", ""), `"name"`, `"task":{"ttl":5},"name"`, 1), legacySSE, "mcp-go"},
		{"requestState", strings.Replace(callBody("1", "text", ""), `"name"`, `"requestState":"s","name"`, 1), legacySSE, "mcp-go"},
		{"_meta not an object", strings.Replace(callBody("1", "text", ""), `"_meta":{}`, `"_meta":3`, 1), legacySSE, "none"},
		// mcp-go reads the last params whole: here a call without a name.
		{"params twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"text"},"params":{"arguments":{}}}`, legacySSE, "none"},
		{"params twice, progress only in the first", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"t"}},"Params":{"name":"progress"}}`, legacySSE, "fast"},
		{"2026-07-28 without Mcp-Name", callBody("1", "text", modernMeta), modern, "none"},
		{"2026-07-28, Mcp-Name of another tool", callBody("1", "text", modernMeta), with(modern, "Mcp-Name", "image"), "none"},
		{"2026-07-28, Mcp-Name in base64", callBody("1", "text", modernMeta), with(modern, "Mcp-Name", "=?base64?dGV4dA==?="), "fast"},
		{"2026-07-28 without Mcp-Method", callBody("1", "text", modernMeta), with(modernText, "Mcp-Method", ""), "none"},
		{"2026-07-28 with Last-Event-ID", callBody("1", "text", modernMeta), with(modernText, "Last-Event-ID", "3"), "none"},
		{"2026-07-28 without the header", callBody("1", "text", modernMeta), with(modernText, "MCP-Protocol-Version", ""), "none"},
		{"2026-07-28 header, older _meta", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":"2025-11-25"`), modernText, "none"},
		{"2026-07-28 without capabilities", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), modernText, "none"},
		// _meta members decode as mcp-go's Meta accessors decode them.
		{"_meta null", strings.Replace(callBody("1", "text", ""), `"_meta":{}`, `"_meta":null`, 1), legacySSE, "fast"},
		{"numeric progress token", callBody("1", "progress", `"progressToken":12`), legacySSE, "fast"},
		{"2026-07-28, version not a string", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}`), modernText, "none"},
		{"2026-07-28, capabilities null", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null`), modernText, "none"},
		{"2026-07-28, log level not a string", callBody("1", "text", modernMeta+`,"io.modelcontextprotocol/logLevel":7`), modernText, "fast"},
		{"2026-07-28, keys in another case", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":"2026-07-28","IO.modelcontextprotocol/clientCapabilities":{}`), modernText, "none"},
		{"2026-07-28, capabilities not an object", callBody("1", "text", `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":"all"`), modernText, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if via := p.compare(t, c.body, c.hdr); via != c.via {
				t.Errorf("the call went through %s, want %s", via, c.via)
			}
		})
	}
}

// A session-based caller's notifications/cancelled reaches its fast call
// (and no other session's), which then answers as mcp-go would.
func TestProxyFastCancel(t *testing.T) {
	agenttest.NeedFast(t)
	p := newFastPair(t)
	p.listTools(t)
	for _, ta := range []*agenttest.Agents{p.fast, p.slow} {
		v := p.via[ta]
		answer := make(chan agenttest.Exchange, 1)
		go func() { answer <- send(t, ta, callBody("7", "block", ""), legacySSE) }()
		if tool := <-v.entered; tool != "block" {
			t.Fatalf("entered %s", tool)
		}
		cancelMsg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`
		if x := send(t, ta, cancelMsg, with(legacySSE, "Mcp-Session-Id", "pgw-other")); x.Status != 202 {
			t.Errorf("cancel of another session: %s", x)
		}
		select {
		case x := <-answer:
			t.Fatalf("another session's cancel ended the call: %s", x)
		default:
		}
		if x := send(t, ta, cancelMsg, legacySSE); x.Status != 202 || x.Body != "" {
			t.Errorf("cancel answered %s, want 202 and no body", x)
		}
		x := <-answer
		if x.Status != 200 || !strings.Contains(x.Body, "context canceled (request id rid-1)") {
			t.Errorf("cancelled call answered %s", x)
		}
		if ta == p.fast && v.last() != "block fast" {
			t.Errorf("the call went through %s", v.last())
		}
	}
	noTrackedCalls(t, p.fast)
}

// noTrackedCalls waits until no call of ta is tracked for cancellation: a
// call is untracked once its answer is written, after its metrics.
func noTrackedCalls(t *testing.T, ta *agenttest.Agents) {
	t.Helper()
	waitFor(t, "no tracked calls left over", func() bool { return endpoint.Running(ta.Requests) == 0 })
}

// Closing the connection ends the fast call's downstream call.
func TestProxyFastDisconnect(t *testing.T) {
	p := newFastPair(t)
	p.listTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", p.fast.Srv.URL+"/px", strings.NewReader(callBody("7", "block", "")))
	for k, v := range legacySSE {
		req.Header.Set(k, v)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-p.via[p.fast].entered
	cancel()
	<-done
	waitFor(t, "the call to end as canceled", func() bool {
		return agenttest.CounterValue(p.fast.Metrics.ToolCalls.WithLabelValues("px", "block", "canceled", "other")) == 1
	})
}

// A burst of progress larger than the buffer is written in order, none
// dropped, before the result.
func TestProxyFastProgressBurst(t *testing.T) {
	agenttest.NeedFast(t)
	p := newFastPair(t)
	p.listTools(t)
	for _, hdr := range []map[string]string{legacySSE, with(modern, "Mcp-Name", "burst")} {
		meta := `"progressToken":5`
		if hdr["Mcp-Method"] != "" {
			meta = modernMeta + "," + meta
		}
		x := send(t, p.fast, callBody("9", "burst", meta), hdr)
		if via := p.via[p.fast].last(); via != "burst fast" {
			t.Errorf("the call went through %s", via)
		}
		events := strings.Split(strings.TrimSuffix(x.Body, "\n\n"), "\n\n")
		if len(events) != burstSize+1 || !strings.Contains(events[burstSize], `"burst done"`) {
			t.Fatalf("got %d events, want %d notifications and the result", len(events), burstSize)
		}
		for i, ev := range events[:burstSize] {
			if want := fmt.Sprintf(`"message":"m%d","progress":%d,"progressToken":5}`, i+1, i+1); !strings.Contains(ev, want) {
				t.Fatalf("#%d out of order or changed: %s", i, ev)
			}
		}
	}
	if dropped := agenttest.CounterValue(p.fast.Metrics.Progress.WithLabelValues("dropped")); dropped != 0 {
		t.Errorf("%v notifications dropped", dropped)
	}
}
