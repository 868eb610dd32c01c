package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pxServer is a downstream MCP server run in the test process (mcp-go,
// Streamable HTTP on 127.0.0.1) with the features a proxy must pass
// through: rich results, gated progress, prompts, resources, a blocking
// tool, and per-tenant tools (X-Tenant decides what tools/list shows).
type pxServer struct {
	name string
	ts   *httptest.Server
	png  []byte

	mu       sync.Mutex
	gates    map[float64]chan struct{} // progress step → released by the test
	blocked  chan struct{}             // closed when "block" first starts
	canceled chan struct{}             // closed when "block" first sees its context end
	once     [2]sync.Once
	tenants  []string // X-Tenant of each tools/call
}

func newPxServer(t *testing.T, name string) *pxServer {
	t.Helper()
	d := &pxServer{name: name, gates: map[float64]chan struct{}{}, blocked: make(chan struct{}), canceled: make(chan struct{})}
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 200, G: 10, B: 30, A: 255})
	var buf bytes.Buffer
	png.Encode(&buf, img)
	d.png = buf.Bytes()

	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false),
		server.WithPromptCapabilities(false), server.WithToolFilter(d.tenantTools))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text", mcpgo.Required())), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.mu.Lock()
		d.tenants = append(d.tenants, req.Header.Get("X-Tenant"))
		d.mu.Unlock()
		return mcpgo.NewToolResultText(name + ":" + req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("image"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent("a picture"),
			mcpgo.NewImageContent(base64.StdEncoding.EncodeToString(d.png), "image/png")}}, nil
	})
	s.AddTool(mcpgo.NewTool("structured"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{
			Result:            mcpgo.Result{Meta: mcpgo.NewMetaFromMap(map[string]any{"trace": "t-1"})},
			Content:           []mcpgo.Content{mcpgo.NewTextContent("quota exceeded"), mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: "res://x", MIMEType: "text/plain", Text: "emb"})},
			StructuredContent: map[string]any{"limit": float64(10), "used": float64(11)},
			IsError:           true,
		}, nil
	})
	s.AddTool(mcpgo.NewTool("admin_reset"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("reset!"), nil
	})
	s.AddTool(mcpgo.NewTool("steps", mcpgo.WithNumber("n"), mcpgo.WithNumber("run")), d.steps)
	s.AddTool(mcpgo.NewTool("block"), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		d.once[0].Do(func() { close(d.blocked) })
		<-ctx.Done()
		d.once[1].Do(func() { close(d.canceled) })
		return nil, ctx.Err()
	})
	s.AddTool(mcpgo.NewTool("tenant_only"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("for acme"), nil
	})
	s.AddTool(mcpgo.NewTool("grow"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// Adding a tool sends notifications/tools/list_changed to the sessions.
		s.AddTool(mcpgo.NewTool("late"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("late tool"), nil
		})
		return mcpgo.NewToolResultText("grown"), nil
	})
	s.AddPrompt(mcpgo.NewPrompt("greet", mcpgo.WithPromptDescription("Greets."), mcpgo.WithArgument("who", mcpgo.RequiredArgument())),
		func(_ context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
			return mcpgo.NewGetPromptResult("greeting", []mcpgo.PromptMessage{
				mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(name+" says hello to "+req.Params.Arguments["who"])),
			}), nil
		})
	s.AddResource(mcpgo.NewResource("res://"+name+"/readme", "readme", mcpgo.WithMIMEType("text/plain")),
		func(_ context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "readme of " + name}}, nil
		})
	s.AddResourceTemplate(mcpgo.NewResourceTemplate("res://"+name+"/items/{id}", "item"),
		func(_ context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.BlobResourceContents{URI: req.Params.URI, MIMEType: "application/octet-stream",
				Blob: base64.StdEncoding.EncodeToString([]byte(name + " item"))}}, nil
		})
	d.ts = httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, pxTenantKey{}, r.Header.Get("X-Tenant"))
	})))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *pxServer) url() string { return d.ts.URL + "/mcp" }

// tenantTools hides tenant_only from every caller but tenant acme.
func (d *pxServer) tenantTools(ctx context.Context, tools []mcpgo.Tool) []mcpgo.Tool {
	hdr, _ := ctx.Value(pxTenantKey{}).(string)
	out := tools[:0:0]
	for _, t := range tools {
		if t.Name != "tenant_only" || hdr == "acme" {
			out = append(out, t)
		}
	}
	return out
}

type pxTenantKey struct{}

// gate returns the channel step n of "steps" waits on.
func (d *pxServer) gate(n float64) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gates[n] == nil {
		d.gates[n] = make(chan struct{})
	}
	return d.gates[n]
}

// steps sends progress 1..n with total n; after each it waits until the
// test opens gate run*100+k, which the test does when step k reached the
// caller. So step k+1, and the result, exist only after step k arrived.
func (d *pxServer) steps(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	n, run := req.GetFloat("n", 3), req.GetFloat("run", 0)
	var token mcpgo.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	for i := 1.0; i <= n; i++ {
		if token != nil {
			server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
				map[string]any{"progressToken": token, "progress": i, "total": n, "message": fmt.Sprintf("step %v of %v", i, n)})
		}
		select {
		case <-d.gate(run*100 + i):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return mcpgo.NewToolResultText("all steps done"), nil
}

func (d *pxServer) tenantLog() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.tenants...)
}

// pxConnect opens a Go SDK session to an agent, sending hdr on every request.
func pxConnect(t *testing.T, url, version string, hdr map[string]string, onProgress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r.Params) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "px-it", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: pxHeaders(hdr)}}
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type pxHeaders map[string]string

func (h pxHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func pxToolNames(t *testing.T, cs *mcp.ClientSession) []string {
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

func pxText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var pxStyles = []struct{ name, version string }{{"sessionless", ""}, {"session-based", "2025-11-25"}}

const pxConfig = `
name: px
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    alpha: {url: "%s", timeout: 20s}
    beta: {url: "%s"}
agents:
  one: {kind: proxy, servers: [alpha]}
  two: {kind: proxy, servers: [alpha, beta], tools: {deny: ["alpha__admin_*"]}}
`

func startPx(t *testing.T) (*gw, *pxServer, *pxServer) {
	alpha, beta := newPxServer(t, "alpha"), newPxServer(t, "beta")
	return startGateway(t, fmt.Sprintf(pxConfig, alpha.url(), beta.url())), alpha, beta
}

func TestProxyToolsOfOneAndTwoServers(t *testing.T) {
	g, _, _ := startPx(t)
	all := []string{"admin_reset", "block", "echo", "grow", "image", "steps", "structured"}
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			one := pxConnect(t, g.Base+"/agents/one/mcp", st.version, nil, nil)
			if got, want := pxToolNames(t, one), []string{"admin_reset", "block", "echo", "get_health", "grow", "image", "steps", "structured"}; !reflect.DeepEqual(got, want) {
				t.Errorf("one server: %v, want %v", got, want)
			}
			res, err := one.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || pxText(res) != "alpha:hi" {
				t.Fatalf("one/echo: %v %v", err, res)
			}
			two := pxConnect(t, g.Base+"/agents/two/mcp", st.version, nil, nil)
			var want []string
			for _, srv := range []string{"alpha", "beta"} {
				for _, n := range all {
					if srv+"__"+n != "alpha__admin_reset" {
						want = append(want, srv+"__"+n)
					}
				}
			}
			want = append(want, "get_health")
			sort.Strings(want)
			if got := pxToolNames(t, two); !reflect.DeepEqual(got, want) {
				t.Errorf("two servers: %v, want %v (prefixed, alpha__admin_* hidden)", got, want)
			}
			for _, srv := range []string{"alpha", "beta"} {
				res, err := two.CallTool(ctx, &mcp.CallToolParams{Name: srv + "__echo", Arguments: map[string]any{"text": "x"}})
				if err != nil || pxText(res) != srv+":x" {
					t.Errorf("%s__echo: %v %v", srv, err, res)
				}
			}
			res, err = two.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__admin_reset"})
			if err != nil || !res.IsError || !strings.Contains(pxText(res), "denied by policy") {
				t.Errorf("a denied tool must be refused with an error result: %v %+v", err, res)
			}
		})
	}
	pxWaitMetric(t, g, `pallasgw_policy_decisions_total{agent="two",caller="other",decision="deny",reason="tool_denied"}`, 2)
	if !g.logged(`"tool":"admin_reset","decision":"deny"`) {
		t.Error("no audit line for the refused call")
	}
	// Written after the call: its outcome and the size of the result the
	// caller got ({"content":[{"type":"text","text":"alpha:hi"}]...}).
	if !g.logged(`"agent":"one","server":"alpha","tool":"echo","decision":"allow","reason":"allowed","outcome":"allow","result_bytes":`) {
		t.Error("no audit line with the outcome and result size of an allowed call")
	}
}

// Progress is relayed as the downstream sends it, one notification at a
// time: the downstream sends step k+1 only after the test saw step k at the
// caller, so a relay that buffered until the result would hang the test.
func TestProxyProgressUnbuffered(t *testing.T) {
	g, alpha, _ := startPx(t)
	for i, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			seen := make(chan *mcp.ProgressNotificationParams, 10)
			cs := pxConnect(t, g.Base+"/agents/one/mcp", st.version, nil, func(p *mcp.ProgressNotificationParams) { seen <- p })
			done := make(chan error, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 3, "run": i},
					Meta: mcp.Meta{"progressToken": fmt.Sprintf("tok-%d", i)}})
				if err == nil && pxText(res) != "all steps done" {
					err = fmt.Errorf("result %+v", res)
				}
				done <- err
			}()
			for want := 1.0; want <= 3; want++ {
				p := pxWithin(t, 10*time.Second, fmt.Sprintf("progress %v", want), seen)
				if p.Progress != want || p.Total != 3 || p.Message != fmt.Sprintf("step %v of 3", want) || p.ProgressToken != fmt.Sprintf("tok-%d", i) {
					t.Errorf("progress %v: got %+v", want, p)
				}
				select {
				case err := <-done:
					t.Fatalf("the result arrived before progress %v was released: %v", want, err)
				default:
				}
				close(alpha.gate(float64(i*100) + want))
			}
			if err := pxWithin(t, 10*time.Second, "the result", done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProxyResultsUnchanged(t *testing.T) {
	g, alpha, _ := startPx(t)
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			cs := pxConnect(t, g.Base+"/agents/one/mcp", st.version, nil, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "image"})
			if err != nil || len(res.Content) != 2 {
				t.Fatalf("image: %v %+v", err, res)
			}
			img, ok := res.Content[1].(*mcp.ImageContent)
			if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, alpha.png) {
				t.Errorf("image not byte-identical: %T %+v", res.Content[1], res.Content[1])
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "structured"})
			if err != nil {
				t.Fatal(err)
			}
			emb, _ := res.Content[1].(*mcp.EmbeddedResource)
			if !res.IsError || pxText(res) != "quota exceeded" || emb == nil || emb.Resource.Text != "emb" ||
				fmt.Sprint(res.StructuredContent) != "map[limit:10 used:11]" || res.Meta["trace"] != "t-1" {
				t.Errorf("structured result changed: isError=%v content=%+v structured=%v meta=%v", res.IsError, res.Content, res.StructuredContent, res.Meta)
			}
		})
	}
}

func TestProxyPromptsAndResources(t *testing.T) {
	g, _, _ := startPx(t)
	ctx := context.Background()
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			one := pxConnect(t, g.Base+"/agents/one/mcp", st.version, nil, nil)
			pr, err := one.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
			if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "alpha says hello to ann" {
				t.Fatalf("one greet: %v %+v", err, pr)
			}
			rr, err := one.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://alpha/readme"})
			if err != nil || rr.Contents[0].Text != "readme of alpha" {
				t.Fatalf("one readme: %v %+v", err, rr)
			}
			two := pxConnect(t, g.Base+"/agents/two/mcp", st.version, nil, nil)
			prompts, err := two.ListPrompts(ctx, nil)
			if err != nil || len(prompts.Prompts) != 2 || prompts.Prompts[0].Name != "alpha__greet" || prompts.Prompts[1].Name != "beta__greet" {
				t.Fatalf("two prompts: %v %+v", err, prompts)
			}
			pr, err = two.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__greet", Arguments: map[string]string{"who": "bo"}})
			if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "beta says hello to bo" {
				t.Fatalf("two beta__greet: %v %+v", err, pr)
			}
			rl, err := two.ListResources(ctx, nil)
			if err != nil || len(rl.Resources) != 2 || rl.Resources[1].URI != "res://beta/readme" || rl.Resources[1].Name != "beta__readme" {
				t.Fatalf("two resources: %v %+v", err, rl)
			}
			tl, err := two.ListResourceTemplates(ctx, nil)
			if err != nil || len(tl.ResourceTemplates) != 2 {
				t.Fatalf("two templates: %v %+v", err, tl)
			}
			for uri, want := range map[string]string{"res://alpha/readme": "readme of alpha", "res://beta/readme": "readme of beta"} {
				rr, err := two.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil || rr.Contents[0].Text != want {
					t.Errorf("read %s: %v %+v", uri, err, rr)
				}
			}
			rr, err = two.ReadResource(ctx, &mcp.ReadResourceParams{URI: "res://beta/items/42"})
			if err != nil || string(rr.Contents[0].Blob) != "beta item" {
				t.Errorf("template read through two: %v %+v", err, rr)
			}
		})
	}
}

// A downstream's notifications/tools/list_changed shows in the next list.
func TestProxyDownstreamListChanged(t *testing.T) {
	g, _, _ := startPx(t)
	cs := pxConnect(t, g.Base+"/agents/one/mcp", "", nil, nil)
	if slicesContain(pxToolNames(t, cs), "late") {
		t.Fatal("late listed before it exists")
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "grow"}); err != nil || pxText(res) != "grown" {
		t.Fatalf("grow: %v %v", err, res)
	}
	eventually(t, 10*time.Second, "the new tool in the proxy's list", func() bool { return slicesContain(pxToolNames(t, cs), "late") })
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late"}); err != nil || pxText(res) != "late tool" {
		t.Fatalf("late: %v %v", err, res)
	}
}

// The caller going away cancels the downstream call.
func TestProxyClientDisconnectCancels(t *testing.T) {
	g, alpha, _ := startPx(t)
	cs := pxConnect(t, g.Base+"/agents/one/mcp", "", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
		done <- err
	}()
	pxWithin(t, 10*time.Second, "the downstream call to start", alpha.blocked)
	cancel()
	pxWithin(t, 10*time.Second, "the caller's call to end", done)
	select {
	case <-alpha.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the downstream call was not canceled")
	}
}

// What a caller sees depends on the credentials its request forwards:
// the downstream shows tenant_only to X-Tenant acme only; the callers'
// rules narrow further.
func TestProxyPerCallerTools(t *testing.T) {
	d := newPxServer(t, "alpha")
	g := startGateway(t, fmt.Sprintf(`
name: px
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: acme-ui, token: acme-token-0123456789}
    - {name: other-ui, token: other-token-0123456789}
mcp:
  servers:
    alpha: {url: "%s", forward_headers: {X-Tenant: X-Tenant}}
policy:
  callers:
    other-ui: {tools: {deny: ["alpha__image"]}}
agents:
  one: {kind: proxy, servers: [alpha]}
`, d.url()))
	acme := pxConnect(t, g.Base+"/agents/one/mcp", "", map[string]string{"Authorization": "Bearer acme-token-0123456789", "X-Tenant": "acme"}, nil)
	other := pxConnect(t, g.Base+"/agents/one/mcp", "2025-11-25", map[string]string{"Authorization": "Bearer other-token-0123456789", "X-Tenant": "globex"}, nil)
	if got := pxToolNames(t, acme); !slicesContain(got, "tenant_only") || !slicesContain(got, "image") {
		t.Errorf("acme sees %v", got)
	}
	if got := pxToolNames(t, other); slicesContain(got, "tenant_only") || slicesContain(got, "image") {
		t.Errorf("other sees %v", got)
	}
	res, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "image"})
	if err != nil || !res.IsError {
		t.Errorf("other calling image: %v %+v", err, res)
	}
	for _, cs := range []*mcp.ClientSession{acme, other} {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "t"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.tenantLog(); !reflect.DeepEqual(got, []string{"acme", "globex"}) {
		t.Errorf("downstream saw tenants %v, want each caller's own", got)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A stdio downstream (the mcpclient tests' server, built here).
func TestProxyStdioServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "stdioserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../agents/mcpclient/testdata/stdioserver").CombinedOutput(); err != nil {
		t.Fatalf("building stdioserver: %v\n%s", err, out)
	}
	g := startGateway(t, fmt.Sprintf(`
name: px
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    local: {transport: stdio, command: %q}
agents:
  loc: {kind: proxy, servers: [local], tools: {deny: ["local__crash"]}}
`, bin))
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			cs := pxConnect(t, g.Base+"/agents/loc/mcp", st.version, nil, nil)
			if got, want := pxToolNames(t, cs), []string{"block", "echo", "env", "get_health", "leak_env", "pid"}; !reflect.DeepEqual(got, want) {
				t.Errorf("tools %v, want %v", got, want)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over stdio"}})
			if err != nil || pxText(res) != "echo:over stdio" {
				t.Errorf("echo: %v %v", err, res)
			}
		})
	}
}

// The values a stdio server's config took from the environment stay out of
// the log, in its args (a "--token ${TOKEN}" is common) as in its env; when
// the process exits, the health check says how, with its last stderr line.
func TestProxyStdioExpandedArgsAndExit(t *testing.T) {
	g := startGateway(t, `
name: px
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    dies:
      command: /bin/sh
      args: ["-c", "echo \"argv: $* env: $MY_TOKEN\" >&2; exit 7", "sh", "--token", "tok=${PGW_K9}"]
      env: {MY_TOKEN: "${PGW_K7}"}
agents:
  d: {kind: proxy, servers: [dies]}
`, "PGW_K9=ARGSECRET9", "PGW_K7=ENVSECRET7")
	cs := pxConnect(t, g.Base+"/agents/d/mcp", "", nil, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_health"})
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Message string }
	if err := json.Unmarshal([]byte(pxText(res)), &health); err != nil {
		t.Fatal(err)
	}
	want := `(the process ended: exit status 7; its last stderr line: "argv: --token tok=<redacted> env: <redacted>")`
	if got := health.Message; !strings.Contains(got, want) || strings.Contains(got, "SECRET") {
		t.Errorf("get_health: %s\nwant it to hold %s", got, want)
	}
	g.Stop() // flushes the log
	logs := g.Logs()
	if !strings.Contains(logs, `"line":"argv: --token tok=<redacted> env: <redacted>"`) {
		t.Errorf("no stderr line with the values redacted:\n%s", logs)
	}
	for _, secret := range []string{"ARGSECRET9", "ENVSECRET7"} {
		if i := strings.Index(logs, secret); i >= 0 {
			t.Errorf("%s in the log: %s", secret, logs[max(0, i-300):min(len(logs), i+100)])
		}
	}
}

// pxWithin waits for ch, failing after d.
func pxWithin[T any](t *testing.T, d time.Duration, what string, ch <-chan T) T {
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

// pxWaitMetric polls /metrics until series has the value want.
func pxWaitMetric(t *testing.T, g *gw, series string, want float64) {
	t.Helper()
	var got float64
	eventually(t, 10*time.Second, fmt.Sprintf("%s = %v (last %v)", series, want, got), func() bool {
		got, _ = g.metric(t, series)
		return got == want
	})
}
