package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// levelDown is a FakeDown that also takes forwarded log levels.
type levelDown struct {
	*agenttest.FakeDown
	mu     sync.Mutex
	levels []string // "server level X-Tenant"
}

func (d *levelDown) SetLogLevel(_ context.Context, server string, level mcpgo.LoggingLevel, hdr http.Header) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.levels = append(d.levels, fmt.Sprintf("%s %s %s", server, level, hdr.Get("X-Tenant")))
	return nil
}

func (d *levelDown) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.levels...)
}

// post sends one raw JSON-RPC message to agent, as JSON that accepts SSE
// unless hdr says otherwise, and returns the response with its body read.
func post(t *testing.T, ta *agenttest.Agents, agent, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	maps.Copy(h, hdr)
	return ta.Post(t, agent, body, h)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":"raw","version":"1"}}}`

func TestEndpointSessionIDs(t *testing.T) {
	ta := agenttest.New(t, agenttest.ProxyOneServer+"  talk: {model: passthrough}\n", agenttest.OneServerDown())
	plain, elicit := regexp.MustCompile(`^pgw-[0-9a-f]{32}\.[0-9a-f]{32}$`), regexp.MustCompile(`^pgw-e-[0-9a-f]{32}\.[0-9a-f]{32}$`)
	elicitURL := regexp.MustCompile(`^pgw-eus-[0-9a-f]{32}\.[0-9a-f]{32}$`)
	for _, c := range []struct {
		name, agent, body string
		hdr               map[string]string
		want              *regexp.Regexp // nil: no session id
	}{
		{"initialize", "px", fmt.Sprintf(initBody, `{}`), nil, plain},
		{"initialize declaring elicitation", "px", fmt.Sprintf(initBody, `{"elicitation":{}}`), nil, elicit},
		{"initialize, llm agent", "talk", fmt.Sprintf(initBody, `{"elicitation":{"form":{}}}`), nil, elicit},
		{"initialize declaring URL-mode elicitation", "px", fmt.Sprintf(initBody, `{"elicitation":{"form":{},"url":{}},"sampling":{}}`), nil, elicitURL},
		{"initialize with a null URL mode", "px", fmt.Sprintf(initBody, `{"elicitation":{"url":null}}`), nil, elicit},
		{"initialize with a version header", "px", fmt.Sprintf(initBody, `{}`), map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, plain},
		{"initialize claiming 2026-07-28", "px", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, nil},
		{"tools/list", "px", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, ta, c.agent, c.body, c.hdr)
			got := resp.Header.Get("Mcp-Session-Id")
			switch {
			case c.want == nil && got != "":
				t.Errorf("session id %q on %s", got, body)
			case c.want != nil && !c.want.MatchString(got):
				t.Errorf("session id %q, want %v (HTTP %d %s)", got, c.want, resp.StatusCode, body)
			}
		})
	}
	_, a := post(t, ta, "px", fmt.Sprintf(initBody, `{}`), nil)
	r1, _ := post(t, ta, "px", fmt.Sprintf(initBody, `{}`), nil)
	r2, _ := post(t, ta, "px", fmt.Sprintf(initBody, `{}`), nil)
	if r1.Header.Get("Mcp-Session-Id") == r2.Header.Get("Mcp-Session-Id") {
		t.Errorf("two initializes got the same session id (%s)", a)
	}
}

func TestProxySetLevel(t *testing.T) {
	down := &levelDown{FakeDown: agenttest.TwoServersDown()}
	ta := agenttest.New(t, proxyTwoServersWithTenant, down)
	sid := map[string]string{"Mcp-Session-Id": "pgw-1", "X-Tenant": "acme"}
	resp, body := post(t, ta, "px", `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`, sid)
	if resp.StatusCode != 200 || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("setLevel: HTTP %d %s", resp.StatusCode, body)
	}
	got := strings.Join(down.got(), ", ")
	if !strings.Contains(got, "a debug acme") || !strings.Contains(got, "b debug acme") || len(down.got()) != 2 {
		t.Errorf("forwarded %q, want debug to both servers with the caller's headers", got)
	}
	if _, body := post(t, ta, "px", `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"loud"}}`, sid); !strings.Contains(body, `"code":-32602`) {
		t.Errorf("invalid level answered %s", body)
	}
	// 2026-07-28 removed logging/setLevel: mcp-go refuses it.
	_, body = post(t, ta, "px", `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"info","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"r","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "logging/setLevel"})
	if !strings.Contains(body, `"error"`) || len(down.got()) != 2 {
		t.Errorf("modern setLevel answered %s and forwarded %v", body, down.got())
	}
}

const proxyTwoServersWithTenant = `
name: unit
mcp:
  servers:
    a: {url: "http://127.0.0.1:1/mcp", forward_headers: {X-Tenant: X-Tenant}}
    b: {url: "http://127.0.0.1:1/mcp", forward_headers: {X-Tenant: X-Tenant}}
agents:
  px: {kind: proxy, servers: [a, b]}
`

// TestProxyLogRelay: downstream log messages reach the caller in order with
// the call's progress; a 2026-07-28 caller gets those at its level or above,
// and none when it states no level (the downstream is then not asked).
func TestProxyLogRelay(t *testing.T) {
	down := agenttest.OneServerDown()
	down.Relayed = func(ctx context.Context, _, _ string, _ map[string]any, onProgress mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
		if rel == nil || rel.Log == nil {
			return mcpgo.NewToolResultText("no logs asked"), nil
		}
		rel.Log(map[string]any{"level": "info", "logger": "l", "data": "first"})
		if onProgress != nil {
			onProgress(1, nil, "half")
		}
		rel.Log(map[string]any{"level": "debug", "data": map[string]any{"n": 2.0}})
		return mcpgo.NewToolResultText("level " + string(rel.LogLevel)), nil
	}
	ta := agenttest.New(t, agenttest.ProxyOneServer, down)
	summary := func(msgs []map[string]any) string {
		var out []string
		for _, m := range msgs {
			p, _ := m["params"].(map[string]any)
			switch {
			case m["method"] == "notifications/message":
				b, _ := json.Marshal(p["data"])
				out = append(out, fmt.Sprintf("%v:%s", p["level"], b))
			case m["method"] == "notifications/progress":
				out = append(out, "progress")
			default:
				out = append(out, fmt.Sprint(m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]))
			}
		}
		return strings.Join(out, ", ")
	}
	for _, c := range []struct {
		name   string
		meta   map[string]any
		modern bool
		want   string
	}{
		{"session-based", map[string]any{"progressToken": "p"}, false, `info:"first", progress, debug:{"n":2}, level `},
		{"session-based without a token", nil, false, `info:"first", debug:{"n":2}, level `},
		{"2026-07-28 at info", map[string]any{"progressToken": "p", mcpgo.MetaKeyLogLevel: "info"}, true, `info:"first", progress, level info`},
		{"2026-07-28 without a level", map[string]any{"progressToken": "p"}, true, `no logs asked`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := summary(ta.RawCall(t, "px", "read", c.meta, c.modern)); got != c.want {
				t.Errorf("got %s\nwant %s", got, c.want)
			}
		})
	}
}

// elicitingDown is a downstream whose tool "read" elicits through the call's
// relay and returns the answer (or the error) as text; a call with argument
// hold waits for release before returning.
func elicitingDown(release <-chan struct{}) *agenttest.FakeDown {
	down := agenttest.OneServerDown()
	down.Relayed = func(ctx context.Context, _, _ string, args map[string]any, _ mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
		if rel == nil || rel.Request == nil {
			return mcpgo.NewToolResultText("no relay"), nil
		}
		res, err := rel.Request(ctx, "elicitation/create",
			json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"ann"}}}}`))
		if args["hold"] == true {
			<-release
		}
		if err != nil {
			return mcpgo.NewToolResultText("error: " + err.Error()), nil
		}
		return mcpgo.NewToolResultText(string(res)), nil
	}
	return down
}

func sessionWith(t *testing.T, ta *agenttest.Agents, agent, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ta.Srv.URL + "/" + agent, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: agenttest.CallerRT{Caller: "bob"}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *sdk.ClientSession, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: args})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	return agenttest.AllText(res)
}

func TestProxyElicitation(t *testing.T) {
	release := make(chan struct{})
	ta := agenttest.New(t, agenttest.ProxyOneServer, elicitingDown(release))
	var asked sync.Map // message → requested schema
	answer := func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		b, _ := json.Marshal(r.Params.RequestedSchema)
		asked.Store(r.Params.Message, string(b))
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "bo"}}, nil
	}
	t.Run("answered", func(t *testing.T) {
		cs := sessionWith(t, ta, "px", "2025-11-25", &sdk.ClientOptions{ElicitationHandler: answer})
		if got := callText(t, cs, nil); got != `{"action":"accept","content":{"name":"bo"}}` {
			t.Errorf("downstream got %s", got)
		}
		if s, _ := asked.Load("name?"); !strings.Contains(fmt.Sprint(s), `"default":"ann"`) {
			t.Errorf("the caller was asked with schema %v", s)
		}
	})
	for _, c := range []struct {
		name, version string
		opts          *sdk.ClientOptions
		want          string
	}{
		{"not declared", "2025-11-25", &sdk.ClientOptions{}, "the caller did not declare the elicitation capability"},
		// 2026-07-28: an input-required round (agents/bridge), which the
		// SDK's client answers with its handler and retries.
		{"2026-07-28", "", &sdk.ClientOptions{ElicitationHandler: answer}, `{"action":"accept","content":{"name":"bo"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := sessionWith(t, ta, "px", c.version, c.opts)
			if got := callText(t, cs, nil); !strings.Contains(got, c.want) {
				t.Errorf("downstream got %q, want %q", got, c.want)
			}
		})
	}
	t.Run("no session id", func(t *testing.T) {
		msgs := ta.RawCall(t, "px", "read", nil, false)
		if got := fmt.Sprint(msgs[len(msgs)-1]["result"]); !strings.Contains(got, endpoint.ErrRequestNoSession.Error()) {
			t.Errorf("downstream got %s", got)
		}
	})
	// mcp-go routes an elicitation answer by session id alone, to one request
	// of a session at a time; the endpoint's own ids route each answer to its
	// request.
	t.Run("two requests of a session at once", func(t *testing.T) {
		var answered atomic.Int32
		count := func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			answered.Add(1)
			return answer(ctx, r)
		}
		cs := sessionWith(t, ta, "px", "2025-11-25", &sdk.ClientOptions{ElicitationHandler: count})
		first := make(chan string, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"hold": true}})
			if err != nil {
				first <- err.Error()
				return
			}
			first <- agenttest.AllText(res)
		}()
		// The first call has its answer and holds; the second elicits while
		// it runs.
		waitFor(t, "the first call to be answered", func() bool { return answered.Load() == 1 && waiting(ta) == 0 })
		if got := callText(t, cs, nil); !strings.Contains(got, `"name":"bo"`) {
			t.Errorf("second request got %q", got)
		}
		close(release)
		if got := <-first; !strings.Contains(got, `"name":"bo"`) {
			t.Errorf("first request got %q", got)
		}
	})
}

// waiting is the number of the agents' requests waiting for a caller's
// answer.
func waiting(ta *agenttest.Agents) int { return endpoint.Waiting(ta.Requests) }

// waitFor polls cond until it holds (agenttest.WaitLimit: the test
// binary's deadline, not a wall-clock guess).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := agenttest.WaitLimit(t)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// TestEndpointKeepsNoSessionState drives many distinct session ids through
// everything that could make mcp-go keep per-session state (initialize,
// logging/setLevel, calls, cancels, elicitation and its answer, answers to
// nothing, DELETE) and then looks into mcp-go's maps keyed by session id:
// none may hold anything once the requests are over.
func TestEndpointKeepsNoSessionState(t *testing.T) {
	base := runtime.NumGoroutine()
	down := &levelDown{FakeDown: elicitingDown(nil)}
	ta := agenttest.New(t, agenttest.ProxyOneServer+"  talk: {model: passthrough}\n", down)
	answer := func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	for i := range 20 {
		cs := sessionWith(t, ta, "px", "2025-11-25", &sdk.ClientOptions{ElicitationHandler: answer})
		if got := callText(t, cs, nil); got != `{"action":"decline"}` {
			t.Fatalf("session %d: %s", i, got)
		}
		if err := cs.SetLoggingLevel(context.Background(), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		cs.Close()
	}
	for i := range 200 {
		for _, agent := range []string{"px", "talk"} {
			sid := map[string]string{"Mcp-Session-Id": fmt.Sprintf("pgw-e-%032x", i), "Mcp-Protocol-Version": "2025-11-25"}
			for _, body := range []string{
				fmt.Sprintf(initBody, `{"elicitation":{}}`),
				`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`,
				`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
				`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
				`{"jsonrpc":"2.0","id":99,"result":{"action":"accept"}}`,
				`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"res://x"}}`,
			} {
				post(t, ta, agent, body, sid)
			}
			if i%10 != 0 {
				continue // most callers never DELETE (mcp-go would clean up then)
			}
			req, _ := http.NewRequest("DELETE", ta.Srv.URL+"/"+agent, nil)
			req.Header.Set("Mcp-Session-Id", sid["Mcp-Session-Id"])
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	for _, name := range []string{"px", "talk"} {
		for what, n := range mcpSessionState(t, ta.Set.Get(name).Handler()) {
			if n != 0 {
				t.Errorf("agent %s: mcp-go's %s holds %d entries", name, what, n)
			}
		}
	}
	if n := waiting(ta); n != 0 {
		t.Errorf("%d requests still wait for callers' answers", n)
	}
	if got := len(down.got()); got != 20+200 {
		t.Errorf("%d levels forwarded, want 220", got)
	}
	ta.Srv.CloseClientConnections()
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= base+5 })
}

// mcpSessionState counts the entries of every map mcp-go (v1.2.1) keys by
// session id, on the StreamableHTTPServer behind the agent's endpoint h and
// its MCPServer. The fields are unexported: a library update that renames
// one fails here, which is the point (re-check what it stores per session).
func mcpSessionState(t *testing.T, h http.Handler) map[string]int {
	t.Helper()
	field := func(v reflect.Value, name string) reflect.Value {
		f := v.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("mcp-go has no field %s.%s any more: re-check its per-session state", v.Type(), name)
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	syncMapLen := func(v reflect.Value) int {
		n := 0
		v.Addr().Interface().(*sync.Map).Range(func(any, any) bool { n++; return true })
		return n
	}
	sh := reflect.ValueOf(endpoint.MCPHandler(h)).Elem()
	s := field(sh, "server").Elem()
	out := map[string]int{
		"sessionLogLevels":         field(field(sh, "sessionLogLevels").Elem(), "logs").Len(),
		"sessionTools":             field(field(sh, "sessionTools").Elem(), "tools").Len(),
		"sessionResources":         field(field(sh, "sessionResources").Elem(), "resources").Len(),
		"sessionResourceTemplates": field(field(sh, "sessionResourceTemplates").Elem(), "templates").Len(),
	}
	for _, name := range []string{"activeSessions", "sessionLastActive", "resumableStreams", "listeningStreams", "listeningPumpStops"} {
		out[name] = syncMapLen(field(sh, name))
	}
	for _, name := range []string{"sessions", "listenSessions", "inflightCancels"} {
		out["MCPServer."+name] = syncMapLen(field(s, name))
	}
	return out
}
