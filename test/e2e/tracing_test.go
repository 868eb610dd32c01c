//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/gwtest"
)

// jaegerConfig runs Jaeger all-in-one on loopback ports of the test: OTLP
// over HTTP in, in-memory storage, the query API out.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry: {metrics: {level: none}, logs: {level: warn}}
extensions:
  jaeger_query:
    storage: {traces: mem}
    http: {endpoint: "127.0.0.1:%d"}
    grpc: {endpoint: "127.0.0.1:%d"}
  jaeger_storage:
    backends: {mem: {memory: {max_traces: 10000}}}
receivers:
  otlp: {protocols: {http: {endpoint: "127.0.0.1:%d"}}}
processors:
  batch: {timeout: 100ms}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`

// startJaeger runs .tools/bin/jaeger (.ci/install-e2e-tools) and returns
// its OTLP/HTTP endpoint and query API base URL.
func startJaeger(t *testing.T) (otlp, query string) {
	bin := filepath.Join(toolsDir(), "bin", "jaeger")
	_, err := os.Stat(bin)
	need(t, "jaeger ("+bin+")", err)
	ports := gwtest.FreePorts(t, 3)
	cfg := writeFile(t, t.TempDir(), "jaeger.yaml", fmt.Sprintf(jaegerConfig, ports[0], ports[1], ports[2]))
	p := startProc(t, "jaeger", exec.Command(bin, "--config", cfg))
	query = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	waitFor(t, "jaeger's query API", 60*time.Second, p, httpGetOK(query+"/api/services"))
	return fmt.Sprintf("http://127.0.0.1:%d", ports[2]), query
}

// traceRecorder is a downstream MCP server whose tool echo records the
// traceparent header and _meta traceparent each call came with.
type traceRecorder struct {
	url     string
	mu      sync.Mutex
	headers []string
	metas   []string
}

func startTraceRecorder(t *testing.T) *traceRecorder {
	d := &traceRecorder{}
	s := server.NewMCPServer("tools", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		meta := ""
		if req.Params.Meta != nil {
			meta, _ = req.Params.Meta.AdditionalFields["traceparent"].(string)
		}
		d.mu.Lock()
		d.metas = append(d.metas, meta)
		d.mu.Unlock()
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			d.mu.Lock()
			d.headers = append(d.headers, r.Header.Get("Traceparent"))
			d.mu.Unlock()
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	d.url = ts.URL + "/mcp"
	return d
}

func (d *traceRecorder) last(t *testing.T) (header, meta string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.headers) == 0 || len(d.metas) == 0 {
		t.Fatal("the downstream tool was not called")
	}
	return d.headers[len(d.headers)-1], d.metas[len(d.metas)-1]
}

// jaegerTrace is a trace as Jaeger's query API (/api/traces) answers it.
type jaegerTrace struct {
	TraceID string       `json:"traceID"`
	Spans   []jaegerSpan `json:"spans"`
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) string {
	for _, tg := range s.Tags {
		if tg.Key == key {
			return fmt.Sprint(tg.Value)
		}
	}
	return ""
}

// queryTraces polls url (/api/traces…) until its traces hold n spans in
// all, and returns them.
func queryTraces(t *testing.T, url string, n int) []jaegerTrace {
	t.Helper()
	var out struct {
		Data []jaegerTrace `json:"data"`
	}
	waitFor(t, "the trace in Jaeger", 30*time.Second, nil, func() error {
		_, _, body, err := get(url, nil)
		if err != nil {
			return err
		}
		out.Data = nil
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			return err
		}
		total := 0
		for _, tr := range out.Data {
			total += len(tr.Spans)
		}
		if total < n {
			return fmt.Errorf("%d of %d spans so far", total, n)
		}
		return nil
	})
	return out.Data
}

// tree is "parent > child" lines of a trace, children in start order as
// Jaeger lists them, by operation name.
func tree(spans []jaegerSpan) []string {
	byID := map[string]jaegerSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var out []string
	for _, s := range spans {
		p, ok := byID[s.parent()]
		name := "(root)"
		if ok {
			name = p.OperationName
		}
		out = append(out, name+" > "+s.OperationName)
	}
	slices.Sort(out)
	return out
}

func spanNamed(t *testing.T, spans []jaegerSpan, name string) jaegerSpan {
	t.Helper()
	for _, s := range spans {
		if s.OperationName == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return jaegerSpan{}
}

func postSendMessage(t *testing.T, url string, hdr map[string]string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"use the tool"}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
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
}

// TestTracesInJaeger: an llm agent's call (one tool call on a downstream
// MCP server, then the answer) exported over OTLP/HTTP to a real Jaeger
// and read back from its query API: one trace, the span tree and
// attributes of the GenAI and MCP conventions, the downstream called within
// the same trace; then a caller's traceparent continued.
func TestTracesInJaeger(t *testing.T) {
	otlp, query := startJaeger(t)
	llm, tool := fakellm.New(t), startTraceRecorder(t)
	service := fmt.Sprintf("pallasgw-e2e-%d", time.Now().UnixNano())
	gw := startGateway(t, fmt.Sprintf(`name: traced
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
tracing: {endpoint: %q, sampling: 1.0, service_name: %q}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-test"}
mcp:
  servers:
    srv: {transport: http, url: %q}
agents:
  x: {instruction: "You are X.", servers: [srv]}
`, otlp, service, llm.OpenAIBaseURL(), tool.url), "OTEL_BSP_SCHEDULE_DELAY=100")
	script := func() {
		llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-1", Name: "srv__echo", Args: json.RawMessage(`{"text":"hi"}`)}), fakellm.Text("final: hi"))
	}
	wantTree := []string{
		"(root) > tools/call send_message",
		"invoke_agent x > chat fake-model",
		"invoke_agent x > chat fake-model",
		"invoke_agent x > tools/call echo",
		"tools/call send_message > invoke_agent x",
	}

	t.Run("one trace", func(t *testing.T) {
		script()
		postSendMessage(t, gw.Base+"/agents/x/mcp", nil)
		traces := queryTraces(t, query+"/api/traces?service="+service+"&limit=20", len(wantTree))
		if len(traces) != 1 {
			t.Fatalf("%d traces, want 1", len(traces))
		}
		tr := traces[0]
		if got := tree(tr.Spans); !slices.Equal(got, wantTree) {
			t.Fatalf("span tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantTree, "\n"))
		}
		t.Logf("trace %s:\n%s", tr.TraceID, strings.Join(tree(tr.Spans), "\n"))
		in := spanNamed(t, tr.Spans, "tools/call send_message")
		call := spanNamed(t, tr.Spans, "tools/call echo")
		run := spanNamed(t, tr.Spans, "invoke_agent x")
		checks := []struct {
			span      jaegerSpan
			key, want string
		}{
			{in, "span.kind", "server"}, {in, "mcp.method.name", "tools/call"}, {in, "gen_ai.tool.name", "send_message"},
			{in, "jsonrpc.request.id", "7"}, {in, "http.response.status_code", "200"},
			{run, "gen_ai.operation.name", "invoke_agent"}, {run, "gen_ai.agent.name", "x"},
			{call, "span.kind", "client"}, {call, "mcp.method.name", "tools/call"}, {call, "gen_ai.tool.name", "echo"},
			{call, "pallasgw.mcp.server", "srv"},
		}
		for _, c := range checks {
			if got := c.span.tag(c.key); got != c.want {
				t.Errorf("%s: %s = %q, want %q", c.span.OperationName, c.key, got, c.want)
			}
		}
		for _, s := range tr.Spans {
			if s.OperationName != "chat fake-model" {
				continue
			}
			if s.tag("span.kind") != "client" || s.tag("gen_ai.operation.name") != "chat" || s.tag("gen_ai.provider.name") != "openai" ||
				s.tag("gen_ai.request.model") != "fake-model" || s.tag("gen_ai.usage.input_tokens") == "" ||
				s.tag("gen_ai.usage.output_tokens") == "" || s.tag("gen_ai.response.finish_reasons") == "" {
				t.Errorf("chat span %s tags: %+v", s.SpanID, s.Tags)
			}
		}
		want := "00-" + tr.TraceID + "-" + call.SpanID + "-01"
		if h, m := tool.last(t); h != want || m != want {
			t.Errorf("the downstream got traceparent %q and _meta %q, want %q", h, m, want)
		}
	})

	t.Run("a caller's traceparent continued", func(t *testing.T) {
		script()
		const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
		postSendMessage(t, gw.Base+"/agents/x/mcp", map[string]string{"Traceparent": "00-" + caller + "-00f067aa0ba902b7-01"})
		traces := queryTraces(t, query+"/api/traces/"+caller, len(wantTree))
		in := spanNamed(t, traces[0].Spans, "tools/call send_message")
		if traces[0].TraceID != caller || in.parent() != "00f067aa0ba902b7" {
			t.Errorf("trace %s, inbound span's parent %q; want the caller's", traces[0].TraceID, in.parent())
		}
		if h, _ := tool.last(t); !strings.HasPrefix(h, "00-"+caller+"-") {
			t.Errorf("the downstream got traceparent %q", h)
		}
	})
}
