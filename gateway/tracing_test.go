package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// tracedTool is a downstream MCP server with one tool, echo, that records
// the trace context each call arrived with: the traceparent header and
// _meta's traceparent.
type tracedTool struct {
	ts      *httptest.Server
	mu      sync.Mutex
	headers []string
	metas   []string
}

func newTracedTool(t *testing.T) *tracedTool {
	d := &tracedTool{}
	s := server.NewMCPServer("tools", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.mu.Lock()
		defer d.mu.Unlock()
		meta := ""
		if req.Params.Meta != nil {
			meta, _ = req.Params.Meta.AdditionalFields["traceparent"].(string)
		}
		d.metas = append(d.metas, meta)
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), `"tools/call"`) {
			d.mu.Lock()
			d.headers = append(d.headers, r.Header.Get("Traceparent"))
			d.mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		} else {
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *tracedTool) last() (header, meta string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.headers) == 0 || len(d.metas) == 0 {
		return "", ""
	}
	return d.headers[len(d.headers)-1], d.metas[len(d.metas)-1]
}

// tracedGateway runs a gateway in process whose spans go to an in-memory
// exporter: an llm agent x using the tool server, and a chain over x.
func tracedGateway(t *testing.T) (base string, exp *tracetest.InMemoryExporter, llm *fakellm.Server, tool *tracedTool, logs *observer.ObservedLogs) {
	return tracedGatewayWith(t, "")
}

// tracedGatewayWith is tracedGateway with extra appended to its config.
func tracedGatewayWith(t *testing.T, extra string) (base string, exp *tracetest.InMemoryExporter, llm *fakellm.Server, tool *tracedTool, logs *observer.ObservedLogs) {
	llm, tool = fakellm.New(t), newTracedTool(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "pallasgw.yaml")
	cfg := fmt.Sprintf(`name: traced
listen: "127.0.0.1:0"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-test"}
mcp:
  servers:
    srv: {transport: http, url: %q}
agents:
  x: {instruction: "You are X.", servers: [srv]}
  pipe: {kind: chain, sequence: [x]}
`, llm.OpenAIBaseURL(), tool.ts.URL+"/mcp") + extra
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	exp = tracetest.NewInMemoryExporter()
	g, err := gateway.New(gateway.Options{ConfigPath: path, Logger: zap.New(core), Version: "test", TraceExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Listen(); err != nil {
		t.Fatal(err)
	}
	go g.Serve()
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() }) // a test has no load balancer to drain from
	return "http://" + g.Addr().String(), exp, llm, tool, logs
}

// callAgent posts one tools/call of send_message with hdr and _meta.
func callAgent(t *testing.T, url string, hdr map[string]string, meta map[string]any) string {
	t.Helper()
	params := map[string]any{"name": "send_message", "arguments": map[string]any{"message": "use the tool"}}
	if meta != nil {
		params["_meta"] = meta
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "final: hi") {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// traceSpans waits for the server span of a trace to end and returns the
// trace's spans (the exporter's, reset).
func traceSpans(t *testing.T, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.SpanKind == trace.SpanKindServer {
				exp.Reset()
				return spans
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no server span within 5s; spans: %v", names(exp.GetSpans()))
	return nil
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// one returns the one span named name.
func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q in %v", len(found), name, names(spans))
	}
	return found[0]
}

func childrenOf(spans tracetest.SpanStubs, parent tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		if s.Parent.SpanID() == parent.SpanContext.SpanID() {
			out = append(out, s.Name)
		}
	}
	return out
}

const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

func TestTraces(t *testing.T) {
	base, exp, llm, tool, logs := tracedGateway(t)
	script := func() {
		llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-1", Name: "srv__echo", Args: json.RawMessage(`{"text":"hi"}`)}), fakellm.Text("final: hi"))
	}

	t.Run("span tree and propagation from the caller's headers", func(t *testing.T) {
		script()
		callAgent(t, base+"/agents/x/mcp", map[string]string{"Traceparent": "00-" + callerTrace + "-00f067aa0ba902b7-01", "Tracestate": "vendor=v1"}, nil)
		spans := traceSpans(t, exp)
		for _, s := range spans {
			if got := s.SpanContext.TraceID().String(); got != callerTrace {
				t.Errorf("span %q in trace %s, want the caller's %s", s.Name, got, callerTrace)
			}
		}
		in := one(t, spans, "tools/call send_message")
		if in.SpanKind != trace.SpanKindServer || in.Parent.SpanID().String() != "00f067aa0ba902b7" || !in.Parent.IsRemote() {
			t.Errorf("inbound span: kind %v parent %v", in.SpanKind, in.Parent)
		}
		for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "send_message", "jsonrpc.request.id": "7"} {
			if got := attr(in, k).AsString(); got != want {
				t.Errorf("inbound %s = %q, want %q", k, got, want)
			}
		}
		if got := attr(in, "http.response.status_code").AsInt64(); got != 200 {
			t.Errorf("inbound http.response.status_code = %d", got)
		}
		run := one(t, spans, "invoke_agent x")
		if run.Parent.SpanID() != in.SpanContext.SpanID() || attr(run, "gen_ai.agent.name").AsString() != "x" ||
			attr(run, "gen_ai.operation.name").AsString() != "invoke_agent" {
			t.Errorf("invoke_agent span: parent %v attrs %v", run.Parent, run.Attributes)
		}
		if got := strings.Join(childrenOf(spans, run), ","); got != "chat fake-model,tools/call echo,chat fake-model" {
			t.Errorf("invoke_agent's children (in end order) = %s", got)
		}
		var chats []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == "chat fake-model" {
				chats = append(chats, s)
			}
		}
		for i, c := range chats {
			if c.SpanKind != trace.SpanKindClient || attr(c, "gen_ai.provider.name").AsString() != "openai" ||
				attr(c, "gen_ai.request.model").AsString() != "fake-model" || attr(c, "gen_ai.usage.input_tokens").AsInt64() <= 0 {
				t.Errorf("chat span %d: %v", i, c.Attributes)
			}
		}
		if got := attr(chats[0], "gen_ai.response.finish_reasons").AsStringSlice(); len(got) != 1 || got[0] != "tool_calls" {
			t.Errorf("first chat's finish reasons = %v", got)
		}
		call := one(t, spans, "tools/call echo")
		if call.SpanKind != trace.SpanKindClient || attr(call, "pallasgw.mcp.server").AsString() != "srv" ||
			attr(call, "gen_ai.tool.name").AsString() != "echo" || attr(call, "mcp.method.name").AsString() != "tools/call" {
			t.Errorf("downstream span: %v %v", call.SpanKind, call.Attributes)
		}
		want := "00-" + callerTrace + "-" + call.SpanContext.SpanID().String() + "-01"
		if h, m := tool.last(); h != want || m != want {
			t.Errorf("downstream got traceparent header %q and _meta %q, want %q", h, m, want)
		}
		reqs := llm.ChatRequests()
		last := reqs[len(reqs)-1]
		if tp := last.Header.Get("Traceparent"); tp != "00-"+callerTrace+"-"+chats[1].SpanContext.SpanID().String()+"-01" {
			t.Errorf("provider got traceparent %q", tp)
		}
		if ts := last.Header.Get("Tracestate"); ts != "vendor=v1" {
			t.Errorf("provider got tracestate %q", ts)
		}
		if n := logs.FilterMessage("send_message").FilterField(zap.String("trace_id", callerTrace)).Len(); n != 1 {
			t.Errorf("%d send_message lines with the trace id", n)
		}
	})

	t.Run("_meta wins, chains nest", func(t *testing.T) {
		script()
		metaTrace := "0af7651916cd43dd8448eb211c80319c"
		callAgent(t, base+"/agents/pipe/mcp", map[string]string{"Traceparent": "00-" + callerTrace + "-00f067aa0ba902b7-01"},
			map[string]any{"traceparent": "00-" + metaTrace + "-b7ad6b7169203331-01"})
		spans := traceSpans(t, exp)
		in := one(t, spans, "tools/call send_message")
		if in.SpanContext.TraceID().String() != metaTrace || in.Parent.SpanID().String() != "b7ad6b7169203331" {
			t.Errorf("inbound span continues %v, want _meta's", in.Parent)
		}
		pipe, x := one(t, spans, "invoke_agent pipe"), one(t, spans, "invoke_agent x")
		if pipe.Parent.SpanID() != in.SpanContext.SpanID() || x.Parent.SpanID() != pipe.SpanContext.SpanID() {
			t.Errorf("chain step not nested: pipe's parent %v, x's parent %v", pipe.Parent.SpanID(), x.Parent.SpanID())
		}
	})

	t.Run("malformed traceparent ignored", func(t *testing.T) {
		script()
		callAgent(t, base+"/agents/x/mcp", map[string]string{"Traceparent": "00-zzzz-00f067aa0ba902b7-01"},
			map[string]any{"traceparent": 42})
		spans := traceSpans(t, exp)
		in := one(t, spans, "tools/call send_message")
		if in.Parent.IsValid() || !in.SpanContext.TraceID().IsValid() {
			t.Errorf("inbound span: parent %v trace %v; want a new trace", in.Parent, in.SpanContext.TraceID())
		}
	})
}

// Requests answered before their message is decoded are traced too: an
// auth refusal, a rate-limit refusal and a GET each get a server span
// "{method} /agents/{name}/mcp" in the caller's trace, with the status;
// every policy decision's audit line, allowed or refused, carries the
// request's trace_id.
func TestTracesOfRefusals(t *testing.T) {
	base, exp, llm, _, logs := tracedGatewayWith(t, `auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
policy:
  callers:
    web: {limits: {requests_per_minute: 1}}
`)
	url := base + "/agents/x/mcp"
	parent := func(n int) string { return fmt.Sprintf("00-%s-%016x-01", callerTrace, n) }
	do := func(method, token string, n int) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"use the tool"}}}`
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Traceparent", parent(n))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	refusal := func(n, status int, name string) {
		t.Helper()
		spans := traceSpans(t, exp)
		s := one(t, spans, name)
		if s.SpanKind != trace.SpanKindServer || s.SpanContext.TraceID().String() != callerTrace || s.Parent.SpanID().String() != fmt.Sprintf("%016x", n) {
			t.Errorf("%s: kind %v trace %v parent %v; want a server span under the caller's", name, s.SpanKind, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
		if got := attr(s, "http.response.status_code").AsInt64(); got != int64(status) {
			t.Errorf("%s: status %d, want %d", name, got, status)
		}
		if got := attr(s, "error.type").AsString(); got != fmt.Sprint(status) {
			t.Errorf("%s: error.type %q", name, got)
		}
		if got := attr(s, "gen_ai.agent.name").AsString(); got != "x" {
			t.Errorf("%s: gen_ai.agent.name %q", name, got)
		}
	}
	audited := func(allowed bool) {
		t.Helper()
		lines := logs.FilterMessage("policy decision").FilterField(zap.String("trace_id", callerTrace)).AllUntimed()
		for _, l := range lines {
			if (l.ContextMap()["decision"] == "allow") == allowed {
				return
			}
		}
		t.Errorf("no audit line with allowed=%v and the trace id among %d", allowed, len(lines))
	}

	if got := do("POST", "wrong-token-0123456789abcdef", 1); got != http.StatusUnauthorized {
		t.Fatalf("wrong token: HTTP %d", got)
	}
	refusal(1, http.StatusUnauthorized, "POST /agents/{name}/mcp")
	audited(false)

	llm.Script(fakellm.Text("final: hi"))
	if got := do("POST", "web-token-0123456789abcdef", 2); got != http.StatusOK {
		t.Fatalf("allowed call: HTTP %d", got)
	}
	if s := one(t, traceSpans(t, exp), "tools/call send_message"); s.Parent.SpanID().String() != fmt.Sprintf("%016x", 2) {
		t.Errorf("allowed call's span parent %v", s.Parent.SpanID())
	}
	audited(true)

	if got := do("POST", "web-token-0123456789abcdef", 3); got != http.StatusTooManyRequests {
		t.Fatalf("over the rate: HTTP %d", got)
	}
	refusal(3, http.StatusTooManyRequests, "POST /agents/{name}/mcp")

	if got := do("GET", "web-token-0123456789abcdef", 4); got != http.StatusMethodNotAllowed {
		t.Fatalf("GET: HTTP %d", got)
	}
	refusal(4, http.StatusMethodNotAllowed, "GET /agents/{name}/mcp")
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)
