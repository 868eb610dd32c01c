package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// tinyPNG is a 1x1 PNG, the image the downstream's image tool returns.
var tinyPNG = mustB64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// toolServer is a downstream MCP server (mcp-go, Streamable HTTP, on
// 127.0.0.1) with scripted tools:
//   - echo {text}: "echo: <text>"
//   - slow {id, steps, quiet}: sends steps progress notifications "working
//     i/n" (quiet: without a message),
//     then blocks until release(id) or until its context ends;
//   - fail: an isError result "boom: disk on fire";
//   - image: an image (tinyPNG) and a caption;
//   - dotted.name: "dotted ok" (its name needs sanitising for the model);
//   - admin_wipe: must never be called (denied by the agents' tools.deny).
type toolServer struct {
	ts *httptest.Server

	mu      sync.Mutex
	calls   []string // tool names in call order
	args    []map[string]any
	gates   map[string]chan struct{}
	started map[string]chan struct{}
	ended   map[string]chan error // the slow call's context error (nil: released)
}

func newToolServer(t testing.TB) *toolServer {
	d := &toolServer{gates: map[string]chan struct{}{}, started: map[string]chan struct{}{}, ended: map[string]chan error{}}
	s := server.NewMCPServer("tools", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Echoes text."), mcpgo.WithString("text", mcpgo.Required())),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			d.record("echo", req)
			return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	s.AddTool(mcpgo.NewTool("slow", mcpgo.WithString("id"), mcpgo.WithNumber("steps"), mcpgo.WithBoolean("quiet")), d.slow)
	s.AddTool(mcpgo.NewTool("fail"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.record("fail", req)
		return mcpgo.NewToolResultError("boom: disk on fire"), nil
	})
	s.AddTool(mcpgo.NewTool("image"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.record("image", req)
		return mcpgo.NewToolResultImage("a tiny image", base64.StdEncoding.EncodeToString(tinyPNG), "image/png"), nil
	})
	s.AddTool(mcpgo.NewTool("dotted.name"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.record("dotted.name", req)
		return mcpgo.NewToolResultText("dotted ok"), nil
	})
	s.AddTool(mcpgo.NewTool("admin_wipe"), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.record("admin_wipe", req)
		return mcpgo.NewToolResultText("wiped"), nil
	})
	// No standalone GET stream: mcp-go puts a tool's progress on a
	// session-wide channel that a listening GET stream drains too, so with
	// one the notifications of a call arrive split across two streams, out
	// of order. Servers on the TypeScript SDK send them on the request's
	// own stream, as this one then does.
	h := server.NewStreamableHTTPServer(s)
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *toolServer) url() string { return d.ts.URL + "/mcp" }

func (d *toolServer) record(name string, req mcpgo.CallToolRequest) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, name)
	d.args = append(d.args, req.GetArguments())
}

// called returns the tool names called so far, in order.
func (d *toolServer) called() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// chans returns (creating) the gate, started and ended channels of id.
func (d *toolServer) chans(id string) (gate, started chan struct{}, ended chan error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gates[id] == nil {
		d.gates[id] = make(chan struct{})
		d.started[id] = make(chan struct{})
		d.ended[id] = make(chan error, 1)
	}
	return d.gates[id], d.started[id], d.ended[id]
}

func (d *toolServer) release(id string) {
	gate, _, _ := d.chans(id)
	close(gate)
}

func (d *toolServer) slow(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	d.record("slow", req)
	id := req.GetString("id", "")
	gate, started, ended := d.chans(id)
	steps := req.GetInt("steps", 0)
	quiet := req.GetBool("quiet", false) // progress without message, like server-everything
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		for i := 1; i <= steps; i++ {
			p := map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": steps}
			if !quiet {
				p["message"] = fmt.Sprintf("working %d/%d", i, steps)
			}
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", p)
		}
	}
	close(started)
	select {
	case <-gate:
		ended <- nil
		return mcpgo.NewToolResultText("slow " + id + " done"), nil
	case <-ctx.Done():
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
}

// llmEnv is a gateway wired to two fake LLM servers (oai behind the openai
// provider, ant behind the anthropic provider) and one tool server "srv".
type llmEnv struct {
	*gw
	oai, ant *fakellm.Server
	srv      *toolServer
}

// llmOpts tweak the generated config.
type llmOpts struct {
	openaiKey string        // default "sk-oai-test"
	extraMCP  string        // more entries under mcp.servers (indented by 4)
	extraTop  string        // more top-level YAML
	prices    bool          // price openai.fake-model and anthropic.fake-model
	before    func(*llmEnv) // runs before the gateway starts
}

// startLLM starts a gateway whose agents are given as YAML (indented by two
// spaces, as entries under agents:). The tool server is always configured
// as "srv".
func startLLM(t *testing.T, agents string, o llmOpts) *llmEnv {
	t.Helper()
	e := &llmEnv{oai: fakellm.New(t), ant: fakellm.New(t), srv: newToolServer(t)}
	if o.openaiKey == "" {
		o.openaiKey = "sk-oai-test"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `name: llmit
version: "1.0.0"
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: %q, timeout: 60s}
    anthropic: {base_url: %q, api_key: "sk-ant-test", timeout: 60s}
`, e.oai.OpenAIBaseURL(), o.openaiKey, e.ant.AnthropicBaseURL())
	if o.prices {
		b.WriteString("  prices:\n    openai.fake-model: {input: 2.5, output: 10}\n    anthropic.fake-model: {input: 3, output: 15}\n")
	}
	b.WriteString(o.extraTop)
	fmt.Fprintf(&b, "mcp:\n  servers:\n    srv: {transport: http, url: %q, timeout: 30s}\n", e.srv.url())
	b.WriteString(o.extraMCP)
	b.WriteString("agents:\n")
	b.WriteString(agents)
	if o.before != nil {
		o.before(e)
	}
	e.gw = startGateway(t, b.String())
	return e
}

// agentURL is the MCP endpoint of agent.
func (e *llmEnv) agentURL(agent string) string { return e.Base + "/agents/" + agent + "/mcp" }

// session connects the Go SDK client (sessionless) to agent; every HTTP
// request carries X-Request-Id: rid when rid is not empty.
func (e *llmEnv) session(t *testing.T, agent, rid string, onProgress func(*mcp.ProgressNotificationClientRequest)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "llm-it", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: e.agentURL(agent), MaxRetries: -1}
	if rid != "" {
		tr.HTTPClient = &http.Client{Transport: headerRT{"X-Request-Id": rid}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", agent, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// headerRT adds fixed headers to every request.
type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// send calls send_message on agent and returns the result (failing the
// test on a protocol error).
func (e *llmEnv) send(t *testing.T, agent string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	cs := e.session(t, agent, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: args})
	if err != nil {
		t.Fatalf("send_message to %s: %v", agent, err)
	}
	return res
}

// answer calls send_message and requires a non-error result; it returns
// the text.
func (e *llmEnv) answer(t *testing.T, agent, message string) string {
	t.Helper()
	res := e.send(t, agent, map[string]any{"message": message})
	text := resultText(res)
	if res.IsError {
		t.Fatalf("send_message to %s: isError result: %s\ngateway log:\n%s", agent, text, e.Logs())
	}
	return text
}

// resultText joins the text blocks of a result.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// metricsText returns the whole /metrics page.
func (e *llmEnv) metricsText(t *testing.T) string {
	t.Helper()
	_, _, body := httpGet(t, e.Base+"/metrics", nil)
	return body
}

// waitSeries polls /metrics until series has value want.
func (g *gw) waitSeries(t *testing.T, series string, want float64) {
	t.Helper()
	var got float64
	var ok bool
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, ok = g.metric(t, series)
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s = %v (present %v), want %v", series, got, ok, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recvWithin waits for ch to close or receive, failing after d.
func recvWithin[T any](t *testing.T, d time.Duration, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// progressLog collects progress notifications from the Go SDK client,
// whose handlers run asynchronously: sorted() orders them by counter.
type progressLog struct {
	mu sync.Mutex
	ps []*mcp.ProgressNotificationParams
}

func (l *progressLog) add(r *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ps = append(l.ps, r.Params)
}

func (l *progressLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.ps {
		out = append(out, p.Message)
	}
	return out
}

func (l *progressLog) has(msg string) bool {
	for _, m := range l.messages() {
		if m == msg {
			return true
		}
	}
	return false
}

// sorted waits until the notification with total arrived, then returns
// every notification ordered by its progress counter.
func (l *progressLog) sorted(t *testing.T) []*mcp.ProgressNotificationParams {
	t.Helper()
	eventually(t, 10*time.Second, "the last progress notification", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range l.ps {
			if p.Total != 0 {
				return true
			}
		}
		return false
	})
	l.mu.Lock()
	out := append([]*mcp.ProgressNotificationParams(nil), l.ps...)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Progress < out[j].Progress })
	return out
}

// sseMsg is one JSON-RPC message read from a raw SSE response.
type sseMsg struct {
	Method string `json:"method"`
	Params struct {
		ProgressToken any      `json:"progressToken"`
		Progress      float64  `json:"progress"`
		Total         *float64 `json:"total"`
		Message       string   `json:"message"`
	} `json:"params"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// rawStream posts one tools/call of send_message to agent as a raw
// sessionless HTTP client and yields the SSE messages in wire order.
type rawStream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func (e *llmEnv) rawCall(t *testing.T, ctx context.Context, agent string, args map[string]any, token string) *rawStream {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "send_message", "arguments": args, "_meta": map[string]any{"progressToken": token}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.agentURL(agent), strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("raw call: HTTP %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &rawStream{resp: resp, sc: sc}
}

// next returns the next message, or nil at the end of the stream.
func (s *rawStream) next(t *testing.T) *sseMsg {
	t.Helper()
	var data strings.Builder
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if data.Len() == 0 {
				continue
			}
			var m sseMsg
			if err := json.Unmarshal([]byte(data.String()), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", data.String(), err)
			}
			return &m
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(v, " "))
		}
	}
	if data.Len() > 0 {
		var m sseMsg
		if err := json.Unmarshal([]byte(data.String()), &m); err == nil {
			return &m
		}
	}
	return nil
}

// toolsOffered returns the tool names of a chat request, sorted.
func toolsOffered(r fakellm.Request) string {
	names := append([]string(nil), r.Chat.Tools...)
	sort.Strings(names)
	return strings.Join(names, ",")
}

// toolResultView is one tool result as the model received it.
type toolResultView struct {
	Text    string
	IsError bool
	Images  []fakellm.Image // Anthropic: inside the block; OpenAI: the user message that follows the tool messages
	Index   int             // message index
}

// findToolResult finds the result for callID in a decoded chat request, in
// either API's shape: OpenAI tool messages (IsError read from an "Error: "
// prefix, since that API has no flag) or Anthropic tool_result blocks.
func findToolResult(r fakellm.Request, callID string) (toolResultView, bool) {
	msgs := r.Chat.Messages
	for i, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == callID {
			fr := toolResultView{Text: m.Text, IsError: strings.HasPrefix(m.Text, "Error: "), Index: i}
			for j := i + 1; j < len(msgs); j++ {
				if msgs[j].Role == "tool" {
					continue
				}
				if msgs[j].Role == "user" && strings.Contains(msgs[j].Text, callID) {
					fr.Images = msgs[j].Images
				}
				break
			}
			return fr, true
		}
		for _, tr := range m.ToolResults {
			if tr.ToolUseID == callID {
				return toolResultView{Text: tr.Text, IsError: tr.IsError, Images: tr.Images, Index: i}, true
			}
		}
	}
	return toolResultView{}, false
}

// chatRoles summarises a chat request's messages as role:text pairs.
func chatRoles(r fakellm.Request) []string {
	var out []string
	for _, m := range r.Chat.Messages {
		out = append(out, m.Role+":"+m.Text)
	}
	return out
}
