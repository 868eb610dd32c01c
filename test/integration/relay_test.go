package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
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

// live is ctx, also ended when the test ends: a tool waiting for its
// caller's answer (a call the gateway parked and nobody retried) must not
// hold the server's Close, which waits for its handlers (go-sdk's session
// Close does not end a handler's pending request).
func (d *relayDown) live(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func newRelayDown(t *testing.T) *relayDown {
	t.Helper()
	d := &relayDown{blocked: map[string]bool{}, stop: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "relaydown", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{},
			Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}}})
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
		ctx, cancel := d.live(ctx)
		defer cancel()
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"name":{"type":"string","default":"ann"}},"required":["name"]}`)})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil
		}
		return text(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil
	})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := d.live(ctx)
		defer cancel()
		var args struct{ Tag string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		// A log message first, so that the request follows a relayed
		// notification on the caller's stream.
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "relaydown", Data: "sampling " + args.Tag}); err != nil {
			return nil, err
		}
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + args.Tag}}}})
		if err != nil {
			return text(fmt.Sprint("sampling failed: ", err)), nil
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return text(fmt.Sprintf("sampling answered %T", res.Content)), nil
		}
		return text(fmt.Sprintf("%s by %s", tc.Text, res.Model)), nil
	})
	s.AddTool(&mcp.Tool{Name: "roots", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := d.live(ctx)
		defer cancel()
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return text(fmt.Sprint("roots failed: ", err)), nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, " ")), nil
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
	// A prompt and a resource that elicit while they answer (the input-required
	// bridge of prompts/get and resources/read).
	elicitName := func(ctx context.Context, ss *mcp.ServerSession) string {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { // an elicitation nobody answers must not hold Close
			select {
			case <-d.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		if err != nil {
			return "elicitation failed: " + err.Error()
		}
		return fmt.Sprintf("%s %v", res.Action, res.Content["name"])
	}
	s.AddPrompt(&mcp.Prompt{Name: "askprompt"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
			Content: &mcp.TextContent{Text: elicitName(ctx, req.Session) + " " + req.Params.Arguments["tag"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "ask://name", Name: "askres"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "ask://name", Text: elicitName(ctx, req.Session)}}}, nil
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

// connectInfo connects c session-based (2025-11-25) to url and asks for
// log messages at info; the session closes with the test.
func connectInfo(t *testing.T, ctx context.Context, c *mcp.Client, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	return cs
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
	cs := connectInfo(t, ctx, c, g.Base+"/agents/px/mcp")
	// The Go SDK client declares roots by default, elicitation with a handler.
	if !strings.HasPrefix(cs.ID(), "pgw-er-") {
		t.Errorf("session id %q: want one minted by the gateway, marked for elicitation and roots", cs.ID())
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
	if err != nil || !strings.Contains(got, "sampling/createMessage is not available through pallasgw for this call: "+
		"the caller did not declare the sampling capability") {
		t.Errorf("sampling without the capability: the downstream got %q (%v)", got, err)
	}
}

// A downstream's sampling/createMessage and roots/list during a call reach
// a session-based caller on that call's response stream, after the call's
// relayed log message, and the caller's answers (or its error) reach the
// downstream; concurrent calls of one session each get their own answer. A
// 2026-07-28 caller cannot be asked: the downstream is told why.
func TestProxyRelaysSamplingAndRoots(t *testing.T) {
	g, _ := startRelay(t)
	var mu sync.Mutex
	var events []string // log messages and sampling requests, in arrival order
	note := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { note(fmt.Sprint("log ", r.Params.Data)) },
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			tc, _ := r.Params.Messages[0].Content.(*mcp.TextContent)
			if tc == nil {
				return nil, fmt.Errorf("content %T", r.Params.Messages[0].Content)
			}
			note("sample " + tc.Text)
			if tc.Text == "hi refuse" {
				return nil, fmt.Errorf("no model for you")
			}
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + tc.Text}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"}, &mcp.Root{URI: "file:///tmp", Name: "tmp"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := connectInfo(t, ctx, c, g.Base+"/agents/px/mcp")
	if !strings.HasPrefix(cs.ID(), "pgw-sr-") {
		t.Errorf("session id %q: want one marked for sampling and roots", cs.ID())
	}
	if got, err := call(ctx, cs, "sample", map[string]any{"tag": "a"}); err != nil || got != "sampled hi a by m1" {
		t.Errorf("sampling: the downstream got %q (%v)", got, err)
	}
	mu.Lock()
	if strings.Join(events, ", ") != "log sampling a, sample hi a" {
		t.Errorf("the caller saw %q; want the log message, then the sampling request", events)
	}
	mu.Unlock()
	if got, err := call(ctx, cs, "roots", nil); err != nil || got != "file:///tmp file:///work" {
		t.Errorf("roots: the downstream got %q (%v)", got, err)
	}
	got, err := call(ctx, cs, "sample", map[string]any{"tag": "refuse"})
	if err != nil || !strings.Contains(got, "no model for you") {
		t.Errorf("sampling refused by the caller: the downstream got %q (%v)", got, err)
	}

	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			tag := fmt.Sprint("p", i)
			if got, err := call(ctx, cs, "sample", map[string]any{"tag": tag}); err != nil || got != "sampled hi "+tag+" by m1" {
				t.Errorf("concurrent sampling %s: the downstream got %q (%v)", tag, got, err)
			}
		})
	}
	wg.Wait()

	// A 2026-07-28 caller is asked with an input-required result
	// (agents/bridge), which the SDK answers with its handler and retries.
	modern, err := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m2", Role: "assistant", Content: &mcp.TextContent{Text: "modern"}}, nil
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.Base + "/agents/px/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer modern.Close()
	got, err = call(ctx, modern, "sample", map[string]any{"tag": "m"})
	if err != nil || got != "modern by m2" {
		t.Errorf("sampling from a 2026-07-28 caller: the downstream got %q (%v)", got, err)
	}
}

// A notifications/cancelled carrying the caller's session id cancels that
// caller's request and no other, even when both used the same JSON-RPC id
// (requests are keyed by session id and request id), and even after a
// reload swapped the agent the calls run on.
func TestCancelReachesOnlyTheCallersRequest(t *testing.T) {
	g, d := startRelay(t)
	url := g.Base + "/agents/px/mcp"
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
	// A reload while the calls run: the cancel reaches the next snapshot's
	// agent, and must still find a's call, which runs on the old one.
	cfg, err := os.ReadFile(g.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	g.writeConfig(t, strings.Replace(string(cfg), "servers: [down]}", "servers: [down], description: reloaded}", 1))
	if code, ans := g.reload(t); code != http.StatusOK {
		t.Fatalf("reload: %d %v", code, ans)
	}
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
