package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayServer is a Go SDK downstream (stateful Streamable HTTP, as the
// conformance server runs) whose tools log, elicit, sample and list roots,
// and whose schemas mcp-go's parser would not keep.
type relayServer struct {
	ts *httptest.Server

	mu   sync.Mutex
	caps []*sdk.ClientCapabilities // capabilities of each session that called "caps"

	blocked, canceled chan struct{} // "block" started; its context ended
	stop              chan struct{} // closed when the test ends
}

const richSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","description":"kept",` +
	`"properties":{"n":{"type":"integer","minimum":1},"mode":{"oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}},` +
	`"required":["n"],"additionalProperties":false,"minProperties":1}`

func newRelayServer(t *testing.T) *relayServer {
	t.Helper()
	d := &relayServer{blocked: make(chan struct{}, 1), canceled: make(chan struct{}, 1), stop: make(chan struct{})}
	s := sdk.NewServer(&sdk.Implementation{Name: "relay", Version: "1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}, Tools: &sdk.ToolCapabilities{}}})
	empty := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	s.AddTool(&sdk.Tool{Name: "logs", InputSchema: json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Tag string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			for i, level := range []sdk.LoggingLevel{"debug", "info", "error"} {
				if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: level, Logger: "relay", Data: fmt.Sprintf("%s %d", args.Tag, i)}); err != nil {
					return nil, err
				}
			}
			return text("logged " + args.Tag), nil
		})
	s.AddTool(&sdk.Tool{Name: "ask", InputSchema: empty}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "pick", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"choice":{"type":"string","oneOf":[{"const":"x","title":"X"}],"default":"x"}}}`)})
		if err != nil {
			return text("elicit failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(res)
		return text(string(b)), nil
	})
	s.AddTool(&sdk.Tool{Name: "sample", InputSchema: empty}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 5, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
		if err == nil {
			return text("sampled by " + res.Model), nil
		}
		return text(fmt.Sprint("sample: ", err)), nil
	})
	s.AddTool(&sdk.Tool{Name: "roots", InputSchema: empty}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		_, err := req.Session.ListRoots(ctx, nil)
		return text(fmt.Sprint("roots: ", err)), nil
	})
	s.AddTool(&sdk.Tool{Name: "block", InputSchema: empty}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		d.blocked <- struct{}{}
		select {
		case <-ctx.Done():
			d.canceled <- struct{}{}
		case <-d.stop:
		}
		return nil, ctx.Err()
	})
	s.AddTool(&sdk.Tool{Name: "caps", InputSchema: empty}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		d.mu.Lock()
		d.caps = append(d.caps, req.Session.InitializeParams().Capabilities)
		d.mu.Unlock()
		return text("ok"), nil
	})
	s.AddTool(&sdk.Tool{Name: "rich", InputSchema: json.RawMessage(richSchema), OutputSchema: json.RawMessage(
		`{"type":"object","properties":{"r":{"type":"number","exclusiveMinimum":0}},"$defs":{"x":{"type":"string"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{StructuredContent: map[string]any{"r": 1}, Content: []sdk.Content{&sdk.TextContent{Text: `{"r":1}`}}}, nil
		})
	d.ts = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(d.ts.Close)
	t.Cleanup(func() { close(d.stop) }) // first: a blocked tool must not hold Close
	return d
}

func (d *relayServer) spec() ServerSpec { return ServerSpec{Name: "relay", URL: d.ts.URL} }

// logCollector is a Relay.Log that records the data of each message.
type logCollector struct {
	mu   sync.Mutex
	data []string
}

func (c *logCollector) log(params map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data = append(c.data, fmt.Sprintf("%v:%v", params["level"], params["data"]))
}

func (c *logCollector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.data...)
}

func TestRelayLogsPerCall(t *testing.T) {
	d := newRelayServer(t)
	var hooked []string
	var hookMu sync.Mutex
	m := newManager(t, Options{OnLogMessage: func(_, level, _ string, data any) {
		hookMu.Lock()
		hooked = append(hooked, fmt.Sprint(level, data))
		hookMu.Unlock()
	}}, d.spec())
	ctx := testCtx(t)

	// The Go SDK logs nothing before a level is set.
	var quiet logCollector
	if _, err := m.CallTool(ctx, "relay", "logs", map[string]any{"tag": "q"}, nil, nil, CallOptions{Relay: &Relay{Log: quiet.log}}); err != nil {
		t.Fatal(err)
	}
	if got := quiet.got(); len(got) != 0 {
		t.Fatalf("logs before any level: %v", got)
	}

	if err := m.SetLogLevel(ctx, "relay", mcp.LoggingLevelInfo, nil); err != nil {
		t.Fatal(err)
	}
	// Parallel calls on one session: each relay gets its own call's
	// messages, in order, before CallTool returns.
	var wg sync.WaitGroup
	cols := make([]logCollector, 8)
	for i := range cols {
		wg.Go(func() {
			tag := fmt.Sprint("c", i)
			if _, err := m.CallTool(ctx, "relay", "logs", map[string]any{"tag": tag}, nil, nil, CallOptions{Relay: &Relay{Log: cols[i].log}}); err != nil {
				t.Error(err)
				return
			}
			want := []string{"info:" + tag + " 1", "error:" + tag + " 2"}
			if got := cols[i].got(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("call %s got %v, want %v", tag, got, want)
			}
		})
	}
	wg.Wait()

	// A call without a relay: its messages go to OnLogMessage.
	if _, err := m.CallTool(ctx, "relay", "logs", map[string]any{"tag": "h"}, nil, nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	hookMu.Lock()
	if strings.Join(hooked, ",") != "infoh 1,errorh 2" {
		t.Errorf("OnLogMessage got %v", hooked)
	}
	hookMu.Unlock()

	// A 2026-07-28 caller's level is the least verbose the session keeps.
	var verbose logCollector
	if _, err := m.CallTool(ctx, "relay", "logs", map[string]any{"tag": "v"}, nil, nil, CallOptions{Relay: &Relay{Log: verbose.log, LogLevel: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	if got := verbose.got(); len(got) != 3 {
		t.Errorf("with LogLevel debug: %v", got)
	}
}

func TestRelayLevelSurvivesReconnect(t *testing.T) {
	d := newRelayServer(t)
	m := newManager(t, Options{}, d.spec())
	ctx := testCtx(t)
	if err := m.SetLogLevel(ctx, "relay", mcp.LoggingLevelError, nil); err != nil {
		t.Fatal(err)
	}
	srv := m.servers["relay"]
	s, _ := srv.acquire(ctx, "test", nil)
	cli, err := s.client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.release(s)
	s.drop(ctx, cli) // the next call connects anew
	var col logCollector
	if _, err := m.CallTool(ctx, "relay", "logs", map[string]any{"tag": "r"}, nil, nil, CallOptions{Relay: &Relay{Log: col.log}}); err != nil {
		t.Fatal(err)
	}
	if got := col.got(); strings.Join(got, ",") != "error:r 2" {
		t.Errorf("after reconnect: %v, want the error message only", got)
	}
}

func TestRelayServerRequests(t *testing.T) {
	d := newRelayServer(t)
	m := newManager(t, Options{}, d.spec())
	ctx := testCtx(t)
	call := func(r *Relay, tool string) string {
		t.Helper()
		res, err := m.CallTool(ctx, "relay", tool, nil, nil, nil, CallOptions{Relay: r})
		if err != nil {
			t.Fatal(err)
		}
		return text(t, res)
	}

	var params json.RawMessage
	ask := &Relay{Request: func(_ context.Context, method string, p json.RawMessage) (json.RawMessage, error) {
		if method != "elicitation/create" {
			return nil, fmt.Errorf("asked %s", method)
		}
		params = p
		return json.RawMessage(`{"action":"accept","content":{"choice":"x"}}`), nil
	}}
	if got := call(ask, "ask"); got != `{"action":"accept","content":{"choice":"x"}}` {
		t.Errorf("elicitation answer reached the server as %s", got)
	}
	// A call that also takes its log messages goes through a transport of
	// its own (relayed): the server's request still reaches its Relay.
	both := &Relay{Log: func(map[string]any) {}, Request: ask.Request}
	if got := call(both, "ask"); got != `{"action":"accept","content":{"choice":"x"}}` {
		t.Errorf("with a log relay, the elicitation answer reached the server as %s", got)
	}
	var p struct {
		Message         string
		RequestedSchema map[string]any
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Message != "pick" ||
		!strings.Contains(string(params), `"oneOf":[{"const":"x","title":"X"}]`) || !strings.Contains(string(params), `"default":"x"`) {
		t.Errorf("elicitation params changed on the way: %s (%v)", params, err)
	}

	// Sampling and roots go to Relay.Request; the caller's error answer
	// reaches the server with its code and message.
	var methods []string
	req := &Relay{Request: func(_ context.Context, method string, p json.RawMessage) (json.RawMessage, error) {
		methods = append(methods, method)
		if method == "roots/list" {
			return nil, &RPCError{Code: -32042, Message: "no roots here"}
		}
		return json.RawMessage(`{"role":"assistant","model":"m","content":{"type":"text","text":"ok"}}`), nil
	}}
	if got := call(req, "sample"); got != "sampled by m" {
		t.Errorf("sampling answer reached the server as %s", got)
	}
	if got := call(req, "roots"); !strings.HasSuffix(got, ": no roots here") {
		t.Errorf("roots error reached the server as %s", got)
	}
	if strings.Join(methods, " ") != "sampling/createMessage roots/list" {
		t.Errorf("Relay.Request got %v", methods)
	}

	for _, c := range []struct{ name, tool, want string }{
		{"elicitation without a relay", "ask", "elicitation/create is not relayed for this request: only proxy agents relay it"},
		{"sampling without a relay", "sample", "sampling/createMessage is not relayed for this request"},
		{"roots without a relay", "roots", "roots/list is not relayed for this request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := call(nil, c.tool); !strings.Contains(got, c.want) {
				t.Errorf("%s answered %q, want it to say %q", c.tool, got, c.want)
			}
		})
	}

	call(nil, "caps")
	d.mu.Lock()
	defer d.mu.Unlock()
	caps := d.caps[0]
	if caps == nil || caps.Elicitation == nil || caps.Sampling == nil || caps.RootsV2 != nil {
		b, _ := json.Marshal(caps)
		t.Errorf("declared client capabilities %s, want elicitation and sampling, not roots", b)
	}
}

// A call whose context ends is canceled downstream too, on both paths:
// mcp-go's client only closes the stream, which a Go SDK server in stateful
// mode does not take for a cancellation.
func TestCallCanceledDownstream(t *testing.T) {
	for name, call := range map[string]func(m *Manager, ctx context.Context) error{
		"typed": func(m *Manager, ctx context.Context) error {
			_, err := m.CallTool(ctx, "relay", "block", nil, nil, nil, CallOptions{})
			return err
		},
		"raw": func(m *Manager, ctx context.Context) error {
			_, err := m.CallToolRaw(ctx, "relay", "block", nil, nil, nil, CallOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := newRelayServer(t)
			m := newManager(t, Options{}, d.spec())
			ctx, cancel := context.WithCancel(testCtx(t))
			errc := make(chan error, 1)
			go func() { errc <- call(m, ctx) }()
			receive(t, "the call to start", d.blocked)
			cancel()
			if err := receive(t, "the call to return", errc); Outcome(err) != "canceled" {
				t.Errorf("call ended with %v", err)
			}
			receive(t, "the downstream tool to be canceled", d.canceled)
		})
	}
}

func TestToolSchemasUnchanged(t *testing.T) {
	d := newRelayServer(t)
	m := newManager(t, Options{}, d.spec())
	tools, err := m.Tools(testCtx(t), "relay", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name != "rich" {
			continue
		}
		if !jsonEqual(t, tl.RawInputSchema, []byte(richSchema)) {
			t.Errorf("inputSchema %s, want %s", tl.RawInputSchema, richSchema)
		}
		if !bytes.Contains(tl.RawOutputSchema, []byte(`"exclusiveMinimum":0`)) || !bytes.Contains(tl.RawOutputSchema, []byte(`"$defs"`)) {
			t.Errorf("outputSchema %s", tl.RawOutputSchema)
		}
		// Marshalled again (as a proxy lists it), the schema is the server's.
		b, err := json.Marshal(tl)
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ InputSchema json.RawMessage }
		_ = json.Unmarshal(b, &back)
		if !jsonEqual(t, back.InputSchema, []byte(richSchema)) {
			t.Errorf("re-marshalled inputSchema %s", back.InputSchema)
		}
		return
	}
	t.Fatalf("tool rich not listed: %s", toolNames(tools))
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
