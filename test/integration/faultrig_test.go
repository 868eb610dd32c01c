package integration

// The rig of the fault tests (faults_test.go): downstream servers that fail
// on purpose, the gateway config wiring them to agents, and the helpers that
// call agents, read counters and wait for goroutines to settle.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// goroutineSlack is how far above its baseline go_goroutines may settle
// after a scenario. Baseline and check are both taken with the gateway's
// keep-alive connections to the fake model and the downstream servers
// closed (fltQuiesce), which would otherwise come and go with two
// goroutines each; what is left is exact, so a goroutine leaked per call
// shows.
const goroutineSlack = 1

// faultServer is a downstream MCP server (mcp-go, Streamable HTTP, on
// 127.0.0.1) whose tools misbehave on purpose:
//   - echo {text}: answers at once;
//   - hang: never answers; reports when it starts and when its context ends;
//   - slow {ms}: answers after ms milliseconds;
//   - drop: starts an SSE answer, then the connection is cut mid-stream;
//   - garbage: the HTTP answer claims JSON but is not;
//   - wrongrpc: the answer is JSON but not a JSON-RPC response.
//
// refuse closes its listener: new connections are refused from then on.
type faultServer struct {
	ts          *httptest.Server
	hangStarted chan struct{}
	hangEnded   chan error
}

func newFaultServer(t *testing.T) *faultServer {
	t.Helper()
	d := &faultServer{hangStarted: make(chan struct{}, 16), hangEnded: make(chan error, 16)}
	s := server.NewMCPServer("faulty", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("hang"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.hangStarted <- struct{}{}
		<-ctx.Done()
		d.hangEnded <- ctx.Err()
		return nil, ctx.Err()
	})
	s.AddTool(mcpgo.NewTool("slow", mcpgo.WithNumber("ms")), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		timer := time.NewTimer(time.Duration(req.GetInt("ms", 100)) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
			return mcpgo.NewToolResultText("slow but sure"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	// Listed so the model is offered them; the HTTP handler answers them.
	for _, name := range []string{"drop", "garbage", "wrongrpc"} {
		s.AddTool(mcpgo.NewTool(name), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultError("the fault was not injected"), nil
		})
	}
	h := server.NewStreamableHTTPServer(s)
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" {
			switch msg.Params.Name {
			case "drop":
				d.drop(w, msg.Params.Meta.ProgressToken)
				return
			case "garbage":
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte("<html><body>502 upstream exploded</body></html>"))
				return
			case "wrongrpc":
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"jsonrpc":"1.0","answer":42}`))
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.ts.Close)
	return d
}

// drop answers with an SSE stream that carries one progress notification
// and half an event, then cuts the connection.
func (d *faultServer) drop(w http.ResponseWriter, token any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	tok, _ := json.Marshal(token)
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1,\"message\":\"about to drop\"}}\n\n", tok)
	fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":")
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func (d *faultServer) url() string { return d.ts.URL + "/mcp" }

// refuse stops accepting connections and cuts the open ones.
func (d *faultServer) refuse() {
	d.ts.Listener.Close()
	d.ts.CloseClientConnections()
}

// faultRig is a gateway wired to a fake model, two fault servers (flaky,
// and blinker, which the blink test turns off) and a server address where
// nothing listens (gone).
type faultRig struct {
	*gw
	llm     *fakellm.Server
	flaky   *faultServer
	blinker *faultServer
}

// faultConfig: flaky and sticky are the same server with a short and a
// long per-call timeout; talker and thinker have no tools, talker a short
// agent timeout; relay and relaysticky proxy flaky and sticky.
const faultConfig = `
name: faults
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-fault-test", timeout: 60s}
mcp:
  servers:
    flaky: {transport: http, url: %q, timeout: 2s}
    sticky: {transport: http, url: %q, timeout: 60s}
    blinker: {transport: http, url: %q, timeout: 5s}
    gone: {transport: http, url: "http://127.0.0.1:%d/mcp", timeout: 2s}
%s
agents:
  worker: {servers: [flaky], timeout: 60s}
  waiter: {servers: [sticky], timeout: 60s}
  blink: {servers: [blinker], timeout: 60s}
  lonely: {servers: [gone], timeout: 60s}
  talker: {timeout: 2s}
  thinker: {timeout: 60s}
  relay: {kind: proxy, servers: [flaky]}
  relaysticky: {kind: proxy, servers: [sticky]}
%s`

// startFaultRig starts the rig; stdio, when set, is the command of a stdio
// server "proc" that agent "runner" uses.
func startFaultRig(t *testing.T, stdio string) *faultRig {
	t.Helper()
	r := &faultRig{llm: fakellm.New(t), flaky: newFaultServer(t), blinker: newFaultServer(t)}
	var procServer, procAgent string
	if stdio != "" {
		procServer = fmt.Sprintf("    proc: {transport: stdio, command: %q, timeout: 10s}", stdio)
		procAgent = "  runner: {servers: [proc], timeout: 60s}\n"
	}
	cfg := fmt.Sprintf(faultConfig, r.llm.OpenAIBaseURL(), r.flaky.url(), r.flaky.url(), r.blinker.url(),
		freePorts(t, 1)[0], procServer, procAgent)
	r.gw = startGateway(t, cfg)
	return r
}

// send calls tool on agent with X-Request-Id: rid over a connection of its
// own and returns the result; a protocol error or a call that does not end
// within a minute fails the test.
func (r *faultRig) send(t *testing.T, agent, rid, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	hc := &http.Client{Transport: fltHeaders{"X-Request-Id": rid}}
	c := mcp.NewClient(&mcp.Implementation{Name: "faults", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.Base + "/agents/" + agent + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", agent, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s on %s: %v\ngateway log:\n%s", tool, agent, err, r.Logs())
	}
	return res
}

// answer sends a message and requires a normal (not isError) result.
func (r *faultRig) answer(t *testing.T, agent, rid, message string) string {
	t.Helper()
	res := r.send(t, agent, rid, "send_message", map[string]any{"message": message})
	if res.IsError {
		t.Fatalf("send_message to %s: isError result: %s", agent, fltText(res))
	}
	return fltText(res)
}

// failure sends a message and requires an isError result naming the
// request id; it returns the text.
func (r *faultRig) failure(t *testing.T, agent, rid, message string) string {
	t.Helper()
	res := r.send(t, agent, rid, "send_message", map[string]any{"message": message})
	text := fltText(res)
	if !res.IsError {
		t.Fatalf("send_message to %s: want an isError result, got %q", agent, text)
	}
	if !strings.Contains(text, "request id "+rid) {
		t.Errorf("error %q does not name the request id %s", text, rid)
	}
	return text
}

// health calls get_health on agent and decodes the answer.
func (r *faultRig) health(t *testing.T, agent string) map[string]string {
	t.Helper()
	res := r.send(t, agent, "health-"+agent, "get_health", nil)
	var h map[string]string
	if err := json.Unmarshal([]byte(fltText(res)), &h); err != nil {
		t.Fatalf("get_health of %s: %v: %s", agent, err, fltText(res))
	}
	return h
}

// toolResult is the text of the tool message answering callID, as the
// model received it in a later request (OpenAI marks errors "Error: ").
func (r *faultRig) toolResult(t *testing.T, callID string) string {
	t.Helper()
	reqs := r.llm.ChatRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		for _, m := range reqs[i].Chat.Messages {
			if m.Role == "tool" && m.ToolCallID == callID {
				return m.Text
			}
		}
	}
	t.Fatalf("no tool result for %s reached the model", callID)
	return ""
}

// sample sums the samples of metric name whose labels include want.
func (g *gw) fltSample(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	_, _, body := httpGet(t, g.Base+"/metrics", nil)
	sum := 0.0
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			labels, value = rest[1:end], rest[end+1:]
		}
		match := true
		for k, v := range want {
			match = match && strings.Contains(","+labels+",", fmt.Sprintf(",%s=%q,", k, v))
		}
		var f float64
		if _, err := fmt.Sscan(strings.TrimSpace(value), &f); err == nil && match {
			sum += f
		}
	}
	return sum
}

// fltCounter watches one counter across a scenario.
type fltCounter struct {
	g      *gw
	name   string
	labels map[string]string
	before float64
}

func (g *gw) fltCounter(t testing.TB, name string, labels map[string]string) *fltCounter {
	return &fltCounter{g: g, name: name, labels: labels, before: g.fltSample(t, name, labels)}
}

// grew waits until the counter has grown by at least n.
func (c *fltCounter) grew(t *testing.T, n float64) {
	t.Helper()
	var now float64
	deadline := time.Now().Add(15 * time.Second)
	for {
		if now = c.g.fltSample(t, c.name, c.labels); now-c.before >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v grew by %v, want %v", c.name, c.labels, now-c.before, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fltHeaders adds fixed headers to every request, on connections that are
// not kept alive (so none lingers in the gateway's goroutine count).
type fltHeaders map[string]string

func (h fltHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return fltTransport.RoundTrip(r)
}

var fltTransport = &http.Transport{DisableKeepAlives: true}

// fltText joins the text blocks of a result.
func fltText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// goroutines reads go_goroutines.
func (g *gw) fltGoroutines(t testing.TB) float64 {
	t.Helper()
	v, ok := g.metric(t, "go_goroutines")
	if !ok {
		t.Fatal("no go_goroutines in /metrics")
	}
	return v
}

// fltQuiesce closes the connections between the gateway and the rig's
// servers (the fake model, flaky, blinker); the gateway's pooled ones end
// with them.
func (r *faultRig) fltQuiesce() {
	r.llm.CloseClientConnections()
	r.flaky.ts.CloseClientConnections()
	r.blinker.ts.CloseClientConnections()
}

// fltBaseline is go_goroutines with the rig's connections closed: the
// value read most often over a second (the /metrics scrape itself makes it
// jitter by one).
func (r *faultRig) fltBaseline(t *testing.T) float64 {
	t.Helper()
	r.fltQuiesce()
	time.Sleep(200 * time.Millisecond) // the gateway sees the connections close
	seen := map[float64]int{}
	var base float64
	for range 20 {
		now := r.fltGoroutines(t)
		seen[now]++
		if seen[now] > seen[base] || (seen[now] == seen[base] && now > base) {
			base = now
		}
		time.Sleep(50 * time.Millisecond)
	}
	return base
}

// fltSettle polls go_goroutines, with the rig's connections closed, until
// it is back within goroutineSlack of base; on failure it prints the
// gateway's goroutines (pprof, loopback admin).
func (r *faultRig) fltSettle(t *testing.T, base float64) {
	t.Helper()
	var now float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.fltQuiesce()
		if now = r.fltGoroutines(t); now <= base+goroutineSlack {
			return
		}
		if time.Now().After(deadline) {
			_, _, dump := httpGet(t, r.Base+"/debug/pprof/goroutine?debug=1", nil)
			t.Fatalf("goroutines stay at %v, baseline %v (+%d):\n%s", now, base, goroutineSlack, dump)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recv waits for one value from ch.
func fltRecv[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// disconnectingCall posts a send_message as a raw client and returns a
// function that disconnects it and waits for the request to end.
func disconnectingCall(t *testing.T, url, rid string) (disconnect func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"go on"},"_meta":{"progressToken":"p1"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Request-Id", rid)
	done := make(chan struct{})
	go func() {
		defer close(done)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	t.Cleanup(cancel)
	return func() {
		cancel()
		fltRecv(t, done, 10*time.Second, "the client request to end")
	}
}

// buildCrashServer builds testdata/crashserver into dir.
func buildCrashServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crashserver")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/crashserver").CombinedOutput()
	if err != nil {
		t.Fatalf("building the stdio server: %v\n%s", err, out)
	}
	return bin
}
