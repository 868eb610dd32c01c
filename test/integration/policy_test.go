package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// captureServer is a downstream MCP server (mcp-go, stateful as most real
// servers are) that records the headers of every HTTP request it receives.
type captureServer struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []http.Header // every non-DELETE request
	deletes []http.Header
	calls   []string // Mcp-Session-Id of each tools/call
}

func newCaptureServer(t *testing.T, name string) *captureServer {
	s := server.NewMCPServer(name, "1")
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("I am " + name), nil
	})
	// echo_headers fails with every header value it was sent in its error,
	// as a careless server's "unauthorized: <the token>" does.
	s.AddTool(mcp.NewTool("echo_headers"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var vals []string
		for _, vs := range req.Header {
			vals = append(vals, vs...)
		}
		return nil, fmt.Errorf("refused: %s", strings.Join(vals, " | "))
	})
	c := &captureServer{}
	h := server.NewStreamableHTTPServer(s)
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		c.mu.Lock()
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			c.calls = append(c.calls, r.Header.Get("Mcp-Session-Id"))
		}
		if r.Method == http.MethodDelete {
			c.deletes = append(c.deletes, r.Header.Clone())
		} else {
			c.reqs = append(c.reqs, r.Header.Clone())
		}
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

// values returns every value header had across all recorded requests.
func (c *captureServer) values(header string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, h := range append(append([]http.Header{}, c.reqs...), c.deletes...) {
		for _, v := range h.Values(header) {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

func (c *captureServer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reqs) + len(c.deletes)
}

const policyGatewayCfg = `
name: pol
listen: "127.0.0.1:{{PORT}}"
auth: {mode: %s%s}
models:
  providers:
    openai: {base_url: "%s", api_key: sk-provider-secret-1234}
mcp:
  servers:
    open:   {url: "%s/mcp", forward_inbound_auth: true}
    closed: {url: "%s/mcp"}
    mapped:
      url: "%s/mcp"
      forward_inbound_auth: true
      headers: {X-Static: static-secret-value, X-Tenant-ID: static-tenant}
      forward_headers: {X-Tenant-ID: X-Tenant-ID, X-User-Token: Authorization, X-Trace: X-Trace}
agents:
  a: {model: openai.fake-model, servers: [open, closed, mapped], port: %d}
  b: {}
`

type policyRig struct {
	g                    *gw
	llm                  *fakellm.Server
	open, closed, mapped *captureServer
	legacyPort           int
}

func startPolicyRig(t *testing.T, mode, tokens string) *policyRig {
	r := &policyRig{llm: fakellm.New(t), open: newCaptureServer(t, "open"), closed: newCaptureServer(t, "closed"), mapped: newCaptureServer(t, "mapped")}
	r.legacyPort = freePorts(t, 1)[0]
	cfg := fmt.Sprintf(policyGatewayCfg, mode, tokens, r.llm.OpenAIBaseURL(), r.open.URL, r.closed.URL, r.mapped.URL, r.legacyPort)
	r.g = startGateway(t, cfg)
	return r
}

// callTools makes the fake model call whoami on all three servers.
func (r *policyRig) callTools(t *testing.T, url string, hdr map[string]string) {
	t.Helper()
	r.llm.Script(fakellm.ToolCalls(
		fakellm.Call{Name: "open__whoami"}, fakellm.Call{Name: "closed__whoami"}, fakellm.Call{Name: "mapped__whoami"},
	), fakellm.Text("done"))
	resp, err := post(url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"go"}}}`, hdr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"done"`) {
		t.Fatalf("call: %d %s", resp.StatusCode, b)
	}
}

func TestOutboundHeaderPolicy(t *testing.T) {
	r := startPolicyRig(t, "passthrough", "")
	r.callTools(t, r.g.Base+"/agents/a/mcp", map[string]string{
		"Authorization": "Bearer caller-secret-token",
		"Cookie":        "session=cookie-secret",
		"X-Tenant-ID":   "tenant-from-caller",
		"X-User-Token":  "user-token-secret",
		"X-Trace":       strings.Repeat("t", 9000), // over 8 KiB: dropped and counted
	})
	// get_health probes (initialize + DELETE) follow the same rules.
	resp, _ := post(r.g.Base+"/agents/a/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_health","arguments":{}}}`,
		map[string]string{"Authorization": "Bearer caller-secret-token", "Cookie": "session=cookie-secret", "X-User-Token": "user-token-secret"})
	resp.Body.Close()

	check := func(name string, c *captureServer, header string, want []string) {
		t.Helper()
		if got := c.values(header); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s received %s = %q, want %q", name, header, got, want)
		}
	}
	for name, c := range map[string]*captureServer{"open": r.open, "closed": r.closed, "mapped": r.mapped} {
		if c.count() < 3 {
			t.Fatalf("%s saw only %d requests", name, c.count())
		}
		check(name, c, "Cookie", nil) // never forwarded
		check(name, c, "X-Trace", nil)
	}
	check("open", r.open, "Authorization", []string{"Bearer caller-secret-token"})
	check("open", r.open, "X-Tenant-ID", nil)
	check("closed", r.closed, "Authorization", nil)
	check("closed", r.closed, "X-Tenant-ID", nil)
	check("closed", r.closed, "X-User-Token", nil)
	check("mapped", r.mapped, "Authorization", []string{"Bearer user-token-secret"}) // mapping beats forward_inbound_auth; a bare token gets "Bearer "
	check("mapped", r.mapped, "X-Tenant-ID", []string{"static-tenant"})              // static beats forwarded
	check("mapped", r.mapped, "X-Static", []string{"static-secret-value"})
	check("mapped", r.mapped, "X-User-Token", nil)
	if v, _ := r.g.metric(t, `pallasgw_forwarded_header_rejections_total{reason="too_long",server="mapped"}`); v < 1 {
		t.Errorf("over-long header not counted (%v)", v)
	}
	// The provider (forward_inbound_auth off) gets its own key and none of
	// the caller's headers.
	for _, req := range r.llm.ChatRequests() {
		if got := req.Header.Get("Authorization"); got != "Bearer sk-provider-secret-1234" {
			t.Errorf("the provider got Authorization %q, want its own key", got)
		}
		for _, name := range []string{"Cookie", "X-Tenant-ID", "X-User-Token", "X-Trace"} {
			if v := req.Header.Get(name); v != "" {
				t.Errorf("the provider got the caller's %s: %q", name, v)
			}
		}
	}
	// The gateway never sent the provider key to a downstream server.
	for _, c := range []*captureServer{r.open, r.closed, r.mapped} {
		for _, v := range c.values("Authorization") {
			if strings.Contains(v, "sk-provider") {
				t.Errorf("provider key leaked downstream")
			}
		}
	}
}

func TestTokensModeNeverForwardsGatewayToken(t *testing.T) {
	r := startPolicyRig(t, "tokens", `, tokens: [{name: web, token: web-token-0123456789abcdef, agents: [a]}]`)
	r.callTools(t, r.g.Base+"/agents/a/mcp", map[string]string{"Authorization": "Bearer web-token-0123456789abcdef", "X-User-Token": "user-token-secret"})
	for name, c := range map[string]*captureServer{"open": r.open, "closed": r.closed} {
		if got := c.values("Authorization"); len(got) != 0 {
			t.Errorf("%s received Authorization %q in tokens mode", name, got)
		}
	}
	// forward_headers still carries downstream credentials.
	if got := r.mapped.values("Authorization"); strings.Join(got, "") != "Bearer user-token-secret" {
		t.Errorf("mapped received Authorization %q", got)
	}
	if !r.g.logged("forward_inbound_auth: ignored in auth mode tokens") {
		t.Error("no warning for forward_inbound_auth in tokens mode")
	}
}

func TestInboundAuth(t *testing.T) {
	r := startPolicyRig(t, "tokens", `, tokens: [{name: web, token: web-token-0123456789abcdef, agents: [a]}, {name: ops, token: "sha256:`+sha256hex("ops-token-0123456789abcdef")+`", agents: ["*"]}]`)
	for _, where := range []struct{ name, a, b string }{
		{"main port", r.g.Base + "/agents/a/mcp", r.g.Base + "/agents/b/mcp"},
		{"legacy port", fmt.Sprintf("http://127.0.0.1:%d/mcp", r.legacyPort), ""},
	} {
		cases := []struct {
			name, url, token string
			want             int
		}{
			{"no token", where.a, "", 401},
			{"wrong token", where.a, "Bearer nope-nope-nope-nope", 401},
			{"right token", where.a, "Bearer web-token-0123456789abcdef", 200},
			{"sha256 token", where.a, "Bearer ops-token-0123456789abcdef", 200},
		}
		if where.b != "" {
			cases = append(cases, struct {
				name, url, token string
				want             int
			}{"right token wrong agent", where.b, "Bearer web-token-0123456789abcdef", 403})
		}
		for _, c := range cases {
			t.Run(where.name+"/"+c.name, func(t *testing.T) {
				hdr := map[string]string{}
				if c.token != "" {
					hdr["Authorization"] = c.token
				}
				resp, err := post(c.url, listTools, hdr)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Fatalf("status %d, want %d", resp.StatusCode, c.want)
				}
				if c.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without WWW-Authenticate: Bearer")
				}
			})
		}
	}
	// The registry, health and metrics need no token.
	for _, p := range []string{"/.well-known/mcp/server.json", "/healthz", "/readyz", "/metrics"} {
		if code, _, _ := httpGet(t, r.g.Base+p, nil); code != 200 {
			t.Errorf("%s = %d without a token", p, code)
		}
	}
}

func TestBlockedHeaderConfigRejected(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("name: t\npolicy: {extra_blocked_headers: [X-Internal]}\nmcp:\n  servers:\n    s:\n      url: http://x/mcp\n      forward_headers: {X-A: Cookie, X-B: x-internal, X-C: X-Forwarded-For}\n"), 0o600)
	out, err := exec.Command(binary(), "validate", "--config", path).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	for _, want := range []string{
		path + `:7: mcp.servers.s.forward_headers.X-A: target "Cookie" is a blocked header`,
		path + `:7: mcp.servers.s.forward_headers.X-B: target "x-internal" is a blocked header`,
		path + `:7: mcp.servers.s.forward_headers.X-C: target "X-Forwarded-For" is a blocked header`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestSecretsNeverLeak runs a whole scenario with known secret values and
// checks none appears in the logs, /metrics or /-/status.
func TestSecretsNeverLeak(t *testing.T) {
	r := startPolicyRig(t, "tokens", `, tokens: [{name: web, token: web-token-0123456789abcdef, agents: ["*"]}]`)
	hdr := map[string]string{"Authorization": "Bearer web-token-0123456789abcdef", "X-User-Token": "user-token-secret", "X-Tenant-ID": "tenant-secret"}
	r.callTools(t, r.g.Base+"/agents/a/mcp", hdr)
	// Servers that echo what they were sent in their errors: the errors
	// reach the model as tool results, and the log.
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{Name: "open__echo_headers"}, fakellm.Call{Name: "mapped__echo_headers"}), fakellm.Text("done"))
	resp, _ := post(r.g.Base+"/agents/a/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"echo"}}}`, hdr)
	resp.Body.Close()
	var toolResults strings.Builder
	for _, req := range r.llm.ChatRequests() {
		for _, m := range req.Chat.Messages {
			if m.Role == "tool" {
				toolResults.WriteString(m.Text + "\n")
			}
		}
	}
	if !strings.Contains(toolResults.String(), "refused: ") || !strings.Contains(toolResults.String(), "<redacted>") {
		t.Errorf("the echoing servers' errors did not reach the model redacted: %q", toolResults.String())
	}
	r.llm.Script(fakellm.Status(401))
	resp, _ = post(r.g.Base+"/agents/a/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"fail please"}}}`, hdr)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	post(r.g.Base+"/agents/a/mcp", listTools, map[string]string{"Authorization": "Bearer wrong-token-guess-1234"})
	_, _, metrics := httpGet(t, r.g.Base+"/metrics", nil)
	_, _, status := httpGet(t, r.g.Base+"/-/status", nil)
	secrets := []string{"web-token-0123456789abcdef", "sk-provider-secret-1234", "static-secret-value", "user-token-secret", "tenant-secret", "wrong-token-guess-1234"}
	for name, text := range map[string]string{"logs": r.g.allLogs(), "metrics": metrics, "status": status, "error result": string(b),
		"tool results sent to the model": toolResults.String()} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q appears in %s", s, name)
			}
		}
	}
	if !strings.Contains(string(b), "isError") || !strings.Contains(string(b), "request id") {
		t.Errorf("provider failure not reported as an isError result with request id: %s", b)
	}
	var st map[string]any
	if json.Unmarshal([]byte(status), &st) != nil || st["config_hash"] == nil {
		t.Errorf("status not served: %s", status)
	}
}
