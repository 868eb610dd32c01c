package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

// fakeDown is an in-memory Downstream and CatalogDownstream: per server a
// tool list, canned results, prompts and resources. call, when set, runs
// instead of the canned result.
type fakeDown struct {
	mu        sync.Mutex
	tools     map[string][]mcpgo.Tool
	results   map[string]*mcpgo.CallToolResult // "server/tool"
	prompts   map[string][]mcpgo.Prompt
	resources map[string][]mcpgo.Resource
	templates map[string][]mcpgo.ResourceTemplate
	listErr   map[string]error
	call      func(ctx context.Context, server, tool string, args map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error)
	calls     []string // "server/tool"
	reads     []string // "server uri"
	headers   []http.Header
}

func (f *fakeDown) Tools(_ context.Context, server string, hdr http.Header) ([]mcpgo.Tool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = append(f.headers, hdr)
	if err := f.listErr[server]; err != nil {
		return nil, err
	}
	return append([]mcpgo.Tool(nil), f.tools[server]...), nil
}

func (f *fakeDown) CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, server+"/"+tool)
	f.headers = append(f.headers, hdr)
	res, call := f.results[server+"/"+tool], f.call
	f.mu.Unlock()
	if call != nil {
		return call(ctx, server, tool, args, onProgress)
	}
	if res == nil {
		return nil, fmt.Errorf("downstream %q: tools/call %q: %w", server, tool, mcpgo.ErrInvalidParams)
	}
	return res, nil
}

func (f *fakeDown) Probe(context.Context, string, http.Header) error { return nil }

func (f *fakeDown) ListPrompts(_ context.Context, server string, _ http.Header) (*mcpgo.ListPromptsResult, error) {
	return &mcpgo.ListPromptsResult{Prompts: f.prompts[server]}, nil
}

func (f *fakeDown) GetPrompt(_ context.Context, server, name string, args map[string]string, _ http.Header) (*mcpgo.GetPromptResult, error) {
	return mcpgo.NewGetPromptResult(server+"/"+name+" "+args["who"], []mcpgo.PromptMessage{
		mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent("hello "+args["who"])),
	}), nil
}

func (f *fakeDown) ListResources(_ context.Context, server string, _ http.Header) (*mcpgo.ListResourcesResult, error) {
	return &mcpgo.ListResourcesResult{Resources: f.resources[server]}, nil
}

func (f *fakeDown) ListResourceTemplates(_ context.Context, server string, _ http.Header) (*mcpgo.ListResourceTemplatesResult, error) {
	return &mcpgo.ListResourceTemplatesResult{ResourceTemplates: f.templates[server]}, nil
}

func (f *fakeDown) ReadResource(_ context.Context, server, uri string, _ http.Header) (*mcpgo.ReadResourceResult, error) {
	f.mu.Lock()
	f.reads = append(f.reads, server+" "+uri)
	f.mu.Unlock()
	return &mcpgo.ReadResourceResult{Contents: []mcpgo.ResourceContents{
		mcpgo.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: "from " + server},
	}}, nil
}

func (f *fakeDown) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// testAgents builds the agents of yaml over down and serves name on an
// httptest server. Requests name their caller in X-Test-Caller (what the
// gateway's auth would have established).
type testAgents struct {
	set     *Set
	metrics *metrics.Metrics
	srv     *httptest.Server
}

func newTestAgents(t *testing.T, yaml string, down Downstream) *testAgents {
	t.Helper()
	return newTestAgentsWith(t, yaml, down, nil)
}

// newTestAgentsWith is newTestAgents with LLM providers by key.
func newTestAgentsWith(t *testing.T, yaml string, down Downstream, providers map[string]llm.Provider) *testAgents {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	m := metrics.New("test")
	rules := map[string]policy.Rule{}
	for name, r := range cfg.Policy.Callers {
		rules[name] = policy.Rule{Agents: r.Agents, Servers: r.Servers, ToolsAllow: r.Tools.Allow, ToolsDeny: r.Tools.Deny}
	}
	callers, err := policy.NewCallerPolicy(rules, nil, cfg.Policy.DenyOnMissingIdentity)
	if err != nil {
		t.Fatal(err)
	}
	set, err := Build(Deps{Config: cfg, Logger: zap.NewNop(), Metrics: m, Downstream: down, Providers: providers,
		Composer: &policy.Composer{Blocklist: policy.NewBlocklist(nil), Metrics: m},
		Auditor:  &policy.Auditor{Metrics: m}, Callers: callers, InboundAuthMayTravel: cfg.Auth.Mode != "tokens"})
	if err != nil {
		t.Fatal(err)
	}
	ta := &testAgents{set: set, metrics: m}
	ta.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := set.Get(strings.TrimPrefix(r.URL.Path, "/"))
		if a == nil {
			http.NotFound(w, r)
			return
		}
		id := policy.Identity{Caller: r.Header.Get("X-Test-Caller")}
		r = r.WithContext(WithRequestID(policy.WithIdentity(r.Context(), id), "rid-1"))
		tw, tr := TrackStream(w, r)
		a.Handler().ServeHTTP(tw, tr)
	}))
	t.Cleanup(ta.srv.Close)
	return ta
}

type callerRT struct{ caller string }

func (c callerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if c.caller != "" {
		r.Header.Set("X-Test-Caller", c.caller)
	}
	r.Header.Set("X-Tenant", "t-"+c.caller)
	return http.DefaultTransport.RoundTrip(r)
}

// session connects an independent client (the official Go SDK) as caller.
func (ta *testAgents) session(t *testing.T, agent, caller, version string, onProgress func(*sdk.ProgressNotificationParams)) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { onProgress(r.Params) }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ta.srv.URL + "/" + agent, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: callerRT{caller}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}

const proxyOneServer = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp", forward_headers: {X-Tenant: X-Tenant}}
policy:
  callers:
    alice: {tools: {deny: ["files__write"]}}
agents:
  px: {kind: proxy, servers: [files], tools: {deny: ["files__admin_*"]}}
`

func oneServerDown() *fakeDown {
	img := mcpgo.NewImageContent("iVBORw0KGgo=", "image/png")
	img.Meta = mcpgo.NewMetaFromMap(map[string]any{"k": "v"})
	rich := &mcpgo.CallToolResult{
		Result:            mcpgo.Result{Meta: mcpgo.NewMetaFromMap(map[string]any{"trace": "abc"})},
		Content:           []mcpgo.Content{mcpgo.NewTextContent("hi"), img, mcpgo.NewAudioContent("UklGRg==", "audio/wav")},
		StructuredContent: map[string]any{"n": float64(3)},
		IsError:           true,
	}
	return &fakeDown{
		tools: map[string][]mcpgo.Tool{"files": {
			mcpgo.NewTool("read", mcpgo.WithDescription("reads"), mcpgo.WithString("path", mcpgo.Required())),
			mcpgo.NewTool("write"), mcpgo.NewTool("admin_wipe"),
		}},
		results: map[string]*mcpgo.CallToolResult{"files/read": rich, "files/write": mcpgo.NewToolResultText("written")},
	}
}

func TestProxyOneServer(t *testing.T) {
	down := oneServerDown()
	ta := newTestAgents(t, proxyOneServer, down)
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("protocol "+v, func(t *testing.T) {
			bob := ta.session(t, "px", "bob", v, nil)
			if got, want := toolNames(t, bob), []string{"get_health", "read", "write"}; !reflect.DeepEqual(got, want) {
				t.Errorf("bob sees %v, want %v (admin_* denied by the agent's rules)", got, want)
			}
			alice := ta.session(t, "px", "alice", v, nil)
			if got, want := toolNames(t, alice), []string{"get_health", "read"}; !reflect.DeepEqual(got, want) {
				t.Errorf("alice sees %v, want %v (write denied by her caller rule)", got, want)
			}
			res, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"path": "/a"}})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(map[string]any{"trace": res.Meta["trace"], "content": res.Content, "structured": res.StructuredContent, "isError": res.IsError})
			want := `{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","_meta":{"k":"v"}},{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}],"isError":true,"structured":{"n":3},"trace":"abc"}`
			if string(got) != want {
				t.Errorf("result changed on the way:\n got %s\nwant %s", got, want)
			}
			before := counterValue(ta.metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied"))
			res, err = alice.CallTool(context.Background(), &sdk.CallToolParams{Name: "write"})
			if err != nil || !res.IsError || !strings.Contains(allText(res), "denied by policy") {
				t.Fatalf("alice calling write: %v %+v", err, res)
			}
			if after := counterValue(ta.metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied")); after != before+1 {
				t.Errorf("policy decisions deny/tool_denied %v → %v, want one more", before, after)
			}
			if _, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"}); err == nil {
				t.Error("a tool no server has must be a JSON-RPC error")
			}
			if res, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_health"}); err != nil || !strings.Contains(allText(res), `"status"`) {
				t.Errorf("get_health: %v %v", err, res)
			}
		})
	}
	for _, c := range down.callLog() {
		if c == "files/admin_wipe" || c == "files/nope" {
			t.Errorf("downstream saw a call it must not: %s", c)
		}
	}
	sawTenant := false
	for _, h := range down.headers {
		sawTenant = sawTenant || h.Get("X-Tenant") == "t-bob"
	}
	if !sawTenant {
		t.Error("forward_headers did not reach the downstream")
	}
}

func allText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// A client that never listed (a restart, a reload) can call directly.
func TestProxyCallWithoutList(t *testing.T) {
	ta := newTestAgents(t, proxyOneServer, oneServerDown())
	cs := ta.session(t, "px", "bob", "", nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write"})
	if err != nil || allText(res) != "written" {
		t.Fatalf("call before any list: %v %v", err, res)
	}
}

const proxyTwoServers = `
name: unit
mcp:
  servers:
    a: {url: "http://127.0.0.1:1/mcp"}
    b: {url: "http://127.0.0.1:2/mcp"}
agents:
  px: {kind: proxy, servers: [a, b]}
`

func twoServersDown() *fakeDown {
	return &fakeDown{
		tools: map[string][]mcpgo.Tool{"a": {mcpgo.NewTool("echo")}, "b": {mcpgo.NewTool("echo"), mcpgo.NewTool("get_health")}},
		results: map[string]*mcpgo.CallToolResult{
			"a/echo": mcpgo.NewToolResultText("from a"), "b/echo": mcpgo.NewToolResultText("from b"),
		},
		prompts: map[string][]mcpgo.Prompt{"a": {mcpgo.NewPrompt("greet", mcpgo.WithArgument("who"))}},
		resources: map[string][]mcpgo.Resource{
			"a": {mcpgo.NewResource("test://a/doc", "doc")},
			"b": {mcpgo.NewResource("test://b/doc", "doc")},
		},
		templates: map[string][]mcpgo.ResourceTemplate{"b": {mcpgo.NewResourceTemplate("test://items/{id}", "item")}},
	}
}

func TestProxyTwoServers(t *testing.T) {
	down := twoServersDown()
	ta := newTestAgents(t, proxyTwoServers, down)
	cs := ta.session(t, "px", "", "2025-11-25", nil)
	ctx := context.Background()
	if got, want := toolNames(t, cs), []string{"a__echo", "b__echo", "b__get_health", "get_health"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	for _, srv := range []string{"a", "b"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: srv + "__echo"})
		if err != nil || allText(res) != "from "+srv {
			t.Errorf("%s__echo: %v %v", srv, err, res)
		}
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "a__greet" {
		t.Fatalf("prompts: %v %+v", err, prompts)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "a__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || pr.Description != "a/greet ann" {
		t.Fatalf("prompts/get: %v %+v", err, pr)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rl.Resources {
		got = append(got, r.Name+" "+r.URI)
	}
	if want := []string{"a__doc test://a/doc", "b__doc test://b/doc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("resources %v, want %v (names prefixed, URIs unchanged)", got, want)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "test://items/{id}" {
		t.Fatalf("templates: %v %+v", err, tl)
	}
	for uri, want := range map[string]string{"test://a/doc": "from a", "test://b/doc": "from b", "test://items/7": "from b"} {
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != want {
			t.Errorf("read %s: %v %+v, want %q", uri, err, rr, want)
		}
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://nowhere"}); err == nil {
		t.Error("a URI no server lists must fail")
	}
}

// Downstream progress reaches the caller under the caller's token, values
// and totals as sent, made strictly increasing, all before the result (in
// wire order, read raw: the Go SDK runs its handlers asynchronously).
func TestProxyProgressRelay(t *testing.T) {
	down := oneServerDown()
	down.call = func(ctx context.Context, _, _ string, _ map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		if onProgress == nil {
			return mcpgo.NewToolResultText("no token asked"), nil
		}
		ten := 10.0
		onProgress(1, &ten, "one")
		onProgress(1, &ten, "again")
		onProgress(0.5, nil, "")
		onProgress(10, &ten, "done")
		return mcpgo.NewToolResultText("finished"), nil
	}
	ta := newTestAgents(t, proxyOneServer, down)
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprintf("modern=%v", modern), func(t *testing.T) {
			msgs := ta.rawCall(t, "px", "read", map[string]any{"progressToken": "tok-9"}, modern)
			if len(msgs) != 5 || msgs[4]["result"] == nil {
				t.Fatalf("want 4 notifications then the result, got %v", msgs)
			}
			last := 0.0
			for i, m := range msgs[:4] {
				p, _ := m["params"].(map[string]any)
				if m["method"] != "notifications/progress" || p["progressToken"] != "tok-9" {
					t.Fatalf("#%d: %v", i, m)
				}
				prog := p["progress"].(float64)
				if i > 0 && !(prog > last) {
					t.Errorf("#%d progress %v not above %v", i, prog, last)
				}
				last = prog
			}
			p := func(i int, k string) any { return msgs[i]["params"].(map[string]any)[k] }
			if p(0, "progress") != 1.0 || p(0, "total") != 10.0 || p(0, "message") != "one" || p(1, "message") != "again" ||
				p(2, "total") != nil || p(3, "progress") != 10.0 || p(3, "message") != "done" {
				t.Errorf("values changed on the way: %v", msgs[:4])
			}
			msgs = ta.rawCall(t, "px", "read", nil, modern)
			if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]["result"]), "no token asked") {
				t.Errorf("without a token the downstream must not be asked for progress: %v", msgs)
			}
		})
	}
}

// rawCall posts one tools/call without any SDK, in the session-based
// style without initialize (allowed by the stateless endpoint) or the
// sessionless 2026-07-28 style, and returns the messages in wire order.
func (ta *testAgents) rawCall(t *testing.T, agent, tool string, meta map[string]any, modern bool) []map[string]any {
	t.Helper()
	if meta == nil {
		meta = map[string]any{}
	}
	if modern {
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": meta}})
	req, _ := http.NewRequest("POST", ta.srv.URL+"/"+agent, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Caller", "bob")
	if modern {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
	} else {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, raw)
	}
	var out []map[string]any
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("bad JSON %q: %v", raw, err)
		}
		return append(out, m)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", data, err)
			}
			out = append(out, m)
		}
	}
	return out
}

// A downstream that cannot be reached gives an isError result naming it;
// a list failure leaves that server's tools out.
func TestProxyDownstreamFailures(t *testing.T) {
	down := twoServersDown()
	down.listErr = map[string]error{"b": fmt.Errorf("downstream %q: %w", "b", mcpclient.ErrUnavailable)}
	down.call = func(ctx context.Context, server, _ string, _ map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		return nil, fmt.Errorf("downstream %q: tools/call: %w", server, mcpclient.ErrUnavailable)
	}
	ta := newTestAgents(t, proxyTwoServers, down)
	cs := ta.session(t, "px", "", "", nil)
	if got, want := toolNames(t, cs), []string{"a__echo", "get_health"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "a__echo"})
	if err != nil || !res.IsError || !strings.Contains(allText(res), "unavailable") || !strings.Contains(allText(res), "rid-1") {
		t.Errorf("unreachable downstream: %v %+v", err, res)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// A burst larger than mcp-go's per-request notification buffer (100) is
// queued and delivered in order, none dropped.
func TestProxyProgressBurst(t *testing.T) {
	const n = 350
	down := oneServerDown()
	down.call = func(ctx context.Context, _, _ string, _ map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		for i := 1; i <= n; i++ {
			onProgress(float64(i), nil, fmt.Sprintf("m%d", i))
		}
		return mcpgo.NewToolResultText("burst done"), nil
	}
	ta := newTestAgents(t, proxyOneServer, down)
	msgs := ta.rawCall(t, "px", "read", map[string]any{"progressToken": 5}, false)
	if len(msgs) != n+1 || msgs[n]["result"] == nil {
		t.Fatalf("got %d messages, want %d notifications and the result", len(msgs), n)
	}
	for i, m := range msgs[:n] {
		if p := m["params"].(map[string]any); p["progress"] != float64(i+1) || p["message"] != fmt.Sprintf("m%d", i+1) || p["progressToken"] != 5.0 {
			t.Fatalf("#%d out of order or changed: %v", i, p)
		}
	}
	if dropped := counterValue(ta.metrics.Progress.WithLabelValues("dropped")); dropped != 0 {
		t.Errorf("%v notifications dropped", dropped)
	}
}
