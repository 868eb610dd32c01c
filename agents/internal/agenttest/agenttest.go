// Package agenttest holds what the tests of the agents packages share: an
// in-memory downstream (FakeDown), a scripted model (ScriptLLM), and a Set
// of agents built from a YAML config and served on an httptest server
// (New) the way the gateway serves them (agents/endpoint's TrackStream),
// with the official Go SDK (Session) or raw posts (Send, RawCall) as the
// caller. It is for tests only; nothing else may import it.
package agenttest

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
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	_ "github.com/pallasgw/pallasgw/agents/kinds/proxy"   // the kinds the tests build
	_ "github.com/pallasgw/pallasgw/agents/kinds/toolbox" // (as the gateway imports them)
	_ "github.com/pallasgw/pallasgw/agents/kinds/toolloop"
	_ "github.com/pallasgw/pallasgw/agents/kinds/workflow"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

// FakeDown is an in-memory mcpclient.Downstream: per server a tool list,
// canned results, prompts and resources. Call, when set, runs instead of
// the canned result; Relayed, when set, instead of Call, given the call's
// Relay (mcpclient.CallOptions.Relay, nil for none). Every server declares tools, prompts and resources
// and no tasks; no tool is hidden; a logging/setLevel is taken and
// dropped.
type FakeDown struct {
	mu        sync.Mutex
	ToolLists map[string][]mcpgo.Tool
	Results   map[string]*mcpgo.CallToolResult // "server/tool"
	Prompts   map[string][]mcpgo.Prompt
	Resources map[string][]mcpgo.Resource
	Templates map[string][]mcpgo.ResourceTemplate
	ListErr   map[string]error
	Call      func(ctx context.Context, server, tool string, args map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error)
	Relayed   func(ctx context.Context, server, tool string, args map[string]any, onProgress mcpclient.ProgressFunc, relay *mcpclient.Relay) (*mcpgo.CallToolResult, error)
	calls     []string // "server/tool"
	reads     []string // "server uri"
	headers   []http.Header
}

func (f *FakeDown) Tools(_ context.Context, server string, hdr http.Header) ([]mcpgo.Tool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = append(f.headers, hdr)
	if err := f.ListErr[server]; err != nil {
		return nil, err
	}
	return append([]mcpgo.Tool(nil), f.ToolLists[server]...), nil
}

func (f *FakeDown) CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcpgo.CallToolResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, server+"/"+tool)
	f.headers = append(f.headers, hdr)
	res, call, relayed := f.Results[server+"/"+tool], f.Call, f.Relayed
	f.mu.Unlock()
	if relayed != nil {
		return relayed(ctx, server, tool, args, onProgress, opts.Relay)
	}
	if call != nil {
		return call(ctx, server, tool, args, onProgress)
	}
	if res == nil {
		return nil, fmt.Errorf("downstream %q: tools/call %q: %w", server, tool, mcpgo.ErrInvalidParams)
	}
	return res, nil
}

// CallToolRaw is CallTool with the result as the bytes a downstream built
// on mcp-go sends for it (json.Marshal).
func (f *FakeDown) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcpclient.RawResult, error) {
	m, err := argsMap(args)
	if err != nil {
		return nil, err
	}
	res, err := f.CallTool(ctx, server, tool, m, hdr, onProgress, opts)
	if err != nil || res == nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return RawOf(b)
}

// RawOf is b, a tools/call result's JSON, as a downstream's raw result.
func RawOf(b []byte) (*mcpclient.RawResult, error) {
	var peek struct {
		IsError    bool            `json:"isError"`
		ResultType string          `json:"resultType"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(b, &peek); err != nil {
		return nil, err
	}
	return &mcpclient.RawResult{JSON: b, IsError: peek.IsError, ResultType: peek.ResultType, Meta: peek.Meta}, nil
}

// CallToolJSON is CallTool with the arguments as JSON.
func (f *FakeDown) CallToolJSON(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcpgo.CallToolResult, error) {
	m, err := argsMap(args)
	if err != nil {
		return nil, err
	}
	return f.CallTool(ctx, server, tool, m, hdr, onProgress, opts)
}

func argsMap(args json.RawMessage) (map[string]any, error) {
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (*FakeDown) Hidden(string, string) error { return nil }

func (*FakeDown) SetLogLevel(context.Context, string, mcpgo.LoggingLevel, http.Header) error {
	return nil
}

// fakeCaps are what every server of a FakeDown declares.
var fakeCaps = func() (c mcpgo.ServerCapabilities) {
	if err := json.Unmarshal([]byte(`{"tools":{},"prompts":{},"resources":{}}`), &c); err != nil {
		panic(err)
	}
	return c
}()

func (*FakeDown) Capabilities(context.Context, string, http.Header) (mcpgo.ServerCapabilities, error) {
	return fakeCaps, nil
}

func (*FakeDown) TaskRequest(_ context.Context, server, method string, _ json.RawMessage, _ http.Header) (json.RawMessage, error) {
	return nil, fmt.Errorf("downstream %q: %s: %w", server, method, mcpgo.ErrMethodNotFound)
}

// Edit runs fn with f locked, for changing its tools or Call while the
// agents may be using it.
func (f *FakeDown) Edit(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func (f *FakeDown) Probe(context.Context, string, http.Header) error { return nil }

func (f *FakeDown) ListPrompts(_ context.Context, server string, _ http.Header) (*mcpgo.ListPromptsResult, error) {
	return &mcpgo.ListPromptsResult{Prompts: f.Prompts[server]}, nil
}

func (f *FakeDown) GetPrompt(_ context.Context, server, name string, args map[string]string, _ http.Header, _ *mcpclient.Relay) (*mcpgo.GetPromptResult, error) {
	return mcpgo.NewGetPromptResult(server+"/"+name+" "+args["who"], []mcpgo.PromptMessage{
		mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent("hello "+args["who"])),
	}), nil
}

func (f *FakeDown) ListResources(_ context.Context, server string, _ http.Header) (*mcpgo.ListResourcesResult, error) {
	return &mcpgo.ListResourcesResult{Resources: f.Resources[server]}, nil
}

func (f *FakeDown) ListResourceTemplates(_ context.Context, server string, _ http.Header) (*mcpgo.ListResourceTemplatesResult, error) {
	return &mcpgo.ListResourceTemplatesResult{ResourceTemplates: f.Templates[server]}, nil
}

func (f *FakeDown) ReadResource(_ context.Context, server, uri string, _ http.Header, _ *mcpclient.Relay) (*mcpgo.ReadResourceResult, error) {
	f.mu.Lock()
	f.reads = append(f.reads, server+" "+uri)
	f.mu.Unlock()
	return &mcpgo.ReadResourceResult{Contents: []mcpgo.ResourceContents{
		mcpgo.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: "from " + server},
	}}, nil
}

// CallLog lists the tools/calls that reached the downstream, "server/tool".
func (f *FakeDown) CallLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Reads lists the resources/reads that reached the downstream, "server uri".
func (f *FakeDown) Reads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reads...)
}

// Headers lists the outbound headers of every list and call, in order.
func (f *FakeDown) Headers() []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.headers...)
}

// Agents is the agents of a config served on an httptest server at
// "/<agent>". Requests name their caller in X-Test-Caller (what the
// gateway's auth would have established); every request has request id
// "rid-1".
type Agents struct {
	Set      *agents.Set
	Config   *config.Config
	Metrics  *metrics.Metrics
	Requests *endpoint.CallerRequests // the Set's
	Srv      *httptest.Server
	slow     atomic.Bool // ThroughMCPGo
}

// ThroughMCPGo serves every later request of ta with the process's wire
// switch off (wire.SetFast), as PALLASGW_WIRE_FAST=off would: the other
// side of a test that holds the hand-written paths to mcp-go's, its
// requests sent one side after the other. The switch is on again once no
// such request runs.
func (ta *Agents) ThroughMCPGo() { ta.slow.Store(true) }

// slowRuns counts the requests running with the switch off (ThroughMCPGo).
var slowRuns struct {
	sync.Mutex
	n int
}

func switchOff() (restore func()) {
	slowRuns.Lock()
	if slowRuns.n++; slowRuns.n == 1 {
		wire.SetFast(false)
	}
	slowRuns.Unlock()
	return func() {
		slowRuns.Lock()
		if slowRuns.n--; slowRuns.n == 0 {
			wire.SetFast(true)
		}
		slowRuns.Unlock()
	}
}

// New builds the agents of yaml over down and serves them.
func New(t *testing.T, yaml string, down mcpclient.Downstream) *Agents {
	t.Helper()
	return NewWith(t, yaml, down, nil)
}

// NewWith is New with LLM providers by key.
func NewWith(t *testing.T, yaml string, down mcpclient.Downstream, providers map[string]llm.Provider) *Agents {
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
	reqs := endpoint.NewCallerRequests()
	set, err := agents.Build(agents.Deps{Config: cfg, Logger: zap.NewNop(), Metrics: m, Downstream: down, Providers: providers,
		Composer: &policy.Composer{Blocklist: policy.NewBlocklist(nil), Metrics: m},
		Auditor:  &policy.Auditor{Metrics: m}, Callers: callers, InboundAuthMayTravel: cfg.Auth.Mode != "tokens",
		CallerRequests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	ta := &Agents{Set: set, Config: cfg, Metrics: m, Requests: reqs}
	ta.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := set.Get(strings.TrimPrefix(r.URL.Path, "/"))
		if a == nil {
			http.NotFound(w, r)
			return
		}
		id := policy.Identity{Caller: r.Header.Get("X-Test-Caller")}
		r = r.WithContext(agents.WithRequestID(policy.WithIdentity(r.Context(), id), "rid-1"))
		if ta.slow.Load() {
			defer switchOff()()
		}
		tw, tr := endpoint.TrackStream(w, r, "rid-1")
		a.Handler().ServeHTTP(tw, tr)
	}))
	t.Cleanup(ta.Srv.Close)
	return ta
}

// CallerRT sets X-Test-Caller (when Caller is set) and X-Tenant "t-<caller>"
// on every request.
type CallerRT struct{ Caller string }

func (c CallerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if c.Caller != "" {
		r.Header.Set("X-Test-Caller", c.Caller)
	}
	r.Header.Set("X-Tenant", "t-"+c.Caller)
	return http.DefaultTransport.RoundTrip(r)
}

// Session connects an independent client (the official Go SDK) to agent as
// caller, speaking version ("" = the SDK's latest).
func (ta *Agents) Session(t *testing.T, agent, caller, version string, onProgress func(*sdk.ProgressNotificationParams)) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { onProgress(r.Params) }
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ta.Srv.URL + "/" + agent, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: CallerRT{caller}}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// ToolNames lists the session's tools, sorted.
func ToolNames(t *testing.T, cs *sdk.ClientSession) []string {
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

// AllText is the text content of a result, concatenated.
func AllText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// RawCall posts as caller "bob" one tools/call without any SDK, in the session-based
// style without initialize (allowed by the stateless endpoint) or the
// sessionless 2026-07-28 style, and returns the messages in wire order.
func (ta *Agents) RawCall(t *testing.T, agent, tool string, meta map[string]any, modern bool) []map[string]any {
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
	req, _ := http.NewRequest("POST", ta.Srv.URL+"/"+agent, strings.NewReader(string(body)))
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

// CounterValue is c's value, or -1 when it cannot be read.
func CounterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// GaugeValue is g's value, or -1 when it cannot be read.
func GaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}

// WaitLimit is how long a test polls for what must happen: until shortly
// before the test binary's own deadline (go test -timeout), not a guess of
// how fast the machine is, so that a loaded machine makes a test slower,
// never failing.
func WaitLimit(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-10 * time.Second)
	}
	return time.Now().Add(time.Hour)
}

// NeedFast skips a test of the hand-written MCP paths (agents/wire), or
// one that holds them to mcp-go's, in a process whose wire switch is off
// (PALLASGW_WIRE_FAST=off): there those paths do not run.
func NeedFast(t testing.TB) {
	t.Helper()
	if !wire.Fast() {
		t.Skipf("%s=off: this test is of the hand-written path, which the switch turns off", wire.EnvFast)
	}
}
