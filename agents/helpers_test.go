package agents

import (
	"context"
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

// Downstream progress reaches the caller under the caller's token, values
// and totals as sent, made strictly increasing, all before the result (in
// wire order, read raw: the Go SDK runs its handlers asynchronously).
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
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// A burst larger than mcp-go's per-request notification buffer (100) is
// queued and delivered in order, none dropped.
