package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayDown is a Go SDK downstream run stateful (as the conformance server
// runs): tools that log, elicit, sample, and block until canceled.
type relayDown struct {
	ts *httptest.Server

	mu       sync.Mutex
	canceled []string // tag of each "block" call whose context ended
	blocked  map[string]bool
	stop     chan struct{} // closed when the test ends
}

func newRelayDown(t *testing.T) *relayDown {
	t.Helper()
	d := &relayDown{blocked: map[string]bool{}, stop: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "relaydown", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}}})
	schema := json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"}}}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "logs", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, m := range []string{"started", "working", "done"} {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "relaydown", Data: m}); err != nil {
				return nil, err
			}
		}
		return text("logged"), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"name":{"type":"string","default":"ann"}},"required":["name"]}`)})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil
		}
		return text(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil
	})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		return text(fmt.Sprint("sampling failed: ", err)), nil
	})
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Tag string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		d.mu.Lock()
		d.blocked[args.Tag] = true
		d.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-d.stop:
			return nil, ctx.Err()
		}
		d.mu.Lock()
		d.canceled = append(d.canceled, args.Tag)
		d.mu.Unlock()
		return nil, ctx.Err()
	})
	d.ts = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(d.ts.Close)
	t.Cleanup(func() { close(d.stop) }) // first: a blocked tool must not hold Close
	return d
}

func (d *relayDown) state() (blocked int, canceled []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.blocked), append([]string(nil), d.canceled...)
}

func startRelay(t *testing.T) (*gw, *relayDown) {
	t.Helper()
	d := newRelayDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: relay
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, d.ts.URL))
	return g, d
}

// A session-based caller of a proxy agent gets the downstream's log
// messages and elicitation requests, and its answer reaches the downstream;
// a downstream asking for sampling gets an error that says why.
func TestProxyRelaysLogsAndElicitation(t *testing.T) {
	g, _ := startRelay(t)
	var mu sync.Mutex
	var logs []string
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, fmt.Sprint(r.Params.Level, " ", r.Params.Data))
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Message != "Your name?" {
				return nil, fmt.Errorf("asked %q", r.Params.Message)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "zoe"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.base + "/agents/px/mcp", MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if !strings.HasPrefix(cs.ID(), "pgw-e-") {
		t.Errorf("session id %q: want one minted by the gateway, marked for elicitation", cs.ID())
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got, err := call(ctx, cs, "logs", nil); err != nil || got != "logged" {
		t.Fatalf("logs: %q %v", got, err)
	}
	eventually(t, 5*time.Second, "three log messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(logs) == 3
	})
	mu.Lock()
	if strings.Join(logs, ", ") != "info started, info working, info done" {
		t.Errorf("log messages %v", logs)
	}
	mu.Unlock()
	if got, err := call(ctx, cs, "ask", nil); err != nil || got != "accept zoe" {
		t.Errorf("elicitation: the downstream got %q (%v)", got, err)
	}
	got, err := call(ctx, cs, "sample", nil)
	if err != nil || !strings.Contains(got, "sampling is not available through pallasgw") {
		t.Errorf("sampling: the downstream got %q (%v)", got, err)
	}
}

// A notifications/cancelled carrying the caller's session id cancels that
// caller's request and no other, even when both used the same JSON-RPC id:
// mcp-go keys requests by session id and request id.
func TestCancelReachesOnlyTheCallersRequest(t *testing.T) {
	g, d := startRelay(t)
	url := g.base + "/agents/px/mcp"
	sessions := map[string]string{}
	for _, who := range []string{"a", "b"} {
		resp, err := post(url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if sessions[who] = resp.Header.Get("Mcp-Session-Id"); sessions[who] == "" {
			t.Fatal("initialize answered without Mcp-Session-Id")
		}
	}
	type answer struct {
		who, body string
	}
	done := make(chan answer, 2)
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	for _, who := range []string{"a", "b"} {
		go func() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(
				`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{"tag":"`+who+`"}}}`))
			if who == "b" {
				req = req.WithContext(ctxB)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sessions[who])
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- answer{who, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- answer{who, string(b)}
		}()
	}
	eventually(t, 10*time.Second, "both calls to reach the downstream", func() bool { n, _ := d.state(); return n == 2 })
	resp, err := post(url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`,
		map[string]string{"Mcp-Session-Id": sessions["a"], "Mcp-Protocol-Version": "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel answered %d", resp.StatusCode)
	}
	select {
	case a := <-done:
		if a.who != "a" {
			t.Fatalf("caller %s's request ended after a's cancel: %s", a.who, a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's request did not end after its cancel")
	}
	eventually(t, 10*time.Second, "the downstream call of a to be canceled", func() bool { _, c := d.state(); return len(c) == 1 })
	if _, c := d.state(); c[0] != "a" {
		t.Fatalf("canceled downstream calls %v, want a only", c)
	}
	cancelB()
	<-done
}
