package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
)

func testGateway(t *testing.T) (*Gateway, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return &Gateway{log: zap.New(core), metrics: metrics.New("test"), calls: newCallCounter()}, logs
}

func TestChainRecoversPanics(t *testing.T) {
	g, logs := testGateway(t)
	h := g.chain("agent", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/agents/x/mcp", nil)
	req.Header.Set("X-Request-Id", "rid-1")
	h.ServeHTTP(rec, req)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"request_id":"rid-1"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if logs.FilterMessage("panic in handler").FilterField(zap.String("request_id", "rid-1")).Len() != 1 {
		t.Fatal("panic not logged with the request id")
	}
}

func TestRequestID(t *testing.T) {
	g, _ := testGateway(t)
	h := g.chain("health", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for in, keep := range map[string]bool{"abc-123": true, "": false, strings.Repeat("x", 200): false, "bad id": false} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Header.Set("X-Request-Id", in)
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if keep != (got == in) || got == "" {
			t.Errorf("X-Request-Id %q -> %q", in, got)
		}
	}
}

func TestBaseURL(t *testing.T) {
	tp, err := newTrustedProxies([]string{"10.0.0.0/8", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, public, remote, proto, fwdHost, want string
	}{
		{"direct", "", "192.0.2.1:5", "", "", "http://gw.local:8200"},
		{"untrusted forwarded", "", "192.0.2.1:5", "https", "evil.example", "http://gw.local:8200"},
		{"trusted forwarded", "", "10.1.2.3:5", "https", "agents.example.com", "https://agents.example.com"},
		{"trusted loopback", "", "127.0.0.1:5", "https, http", "a.example, b", "https://a.example"},
		{"bad forwarded host", "", "10.1.2.3:5", "ftp", "x/y", "http://gw.local:8200"},
		{"public_url wins", "https://pub.example/", "10.1.2.3:5", "http", "x", "https://pub.example"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{cfg: &config.Config{PublicURL: c.public}, trusted: tp}
			r := httptest.NewRequest("GET", "/", nil)
			r.Host, r.RemoteAddr = "gw.local:8200", c.remote
			if c.proto != "" {
				r.Header.Set("X-Forwarded-Proto", c.proto)
				r.Header.Set("X-Forwarded-Host", c.fwdHost)
			}
			if got := s.baseURL(r); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestUnroutableCancel(t *testing.T) {
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`
	modernMeta := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		name, body string
		h          http.Header
		drop       bool
	}{
		{"no session", cancel, hdr(), true},
		{"session", cancel, hdr("Mcp-Session-Id", "pgw-1"), false},
		{"session, legacy version", cancel, hdr("Mcp-Session-Id", "pgw-1", "Mcp-Protocol-Version", "2025-11-25"), false},
		// mcp-go ignores the session id of a 2026-07-28 message.
		{"session, modern header", cancel, hdr("Mcp-Session-Id", "pgw-1", "Mcp-Protocol-Version", "2026-07-28"), true},
		{"session, modern _meta", modernMeta, hdr("Mcp-Session-Id", "pgw-1"), true},
		{"not a cancel", `{"method":"tools/call","params":{"x":"notifications/cancelled"}}`, hdr(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg, err := wire.Parse([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := isUnroutableCancel(msg, c.h); got != c.drop {
				t.Errorf("dropped = %v, want %v", got, c.drop)
			}
		})
	}
}

func TestCallCounter(t *testing.T) {
	c := newCallCounter()
	if !c.waitZero(time.Millisecond, nil) {
		t.Fatal("idle counter not zero")
	}
	c.add()
	if c.waitZero(10*time.Millisecond, nil) {
		t.Fatal("zero while a call runs")
	}
	go c.done()
	if !c.waitZero(5*time.Second, nil) {
		t.Fatal("not zero after done")
	}
}

// Named providers: each is built by its type under its name, and its
// header rules are checked like a server's.
func TestNamedProviderConfig(t *testing.T) {
	raw := `
name: t
models:
  providers:
    openai: {}
    claude: {type: anthropic, headers: {Host: x}, forward_headers: {X-A: Content-Length}}
    local: {type: openai, base_url: "http://127.0.0.1:1/v1", headers: {X-Static: v}}
`
	_, err := config.Parse("t.yaml", []byte(raw), policyChecks)
	if err == nil {
		t.Fatal("blocked provider headers loaded")
	}
	for _, want := range []string{`t.yaml:6: models.providers.claude.headers.Host: "Host" is a blocked header`,
		`t.yaml:6: models.providers.claude.forward_headers.X-A: target "Content-Length" is a blocked header`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	cfg, err := config.Parse("t.yaml", []byte(strings.Replace(raw, "headers: {Host: x}, forward_headers: {X-A: Content-Length}", "api_key: k", 1)), policyChecks)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := buildProviders(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, p := range ps {
		got[name] = p.Name()
	}
	if want := map[string]string{"openai": "openai", "claude": "anthropic", "local": "openai"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("providers = %v, want %v", got, want)
	}
	if cfg.Models.Providers["claude"].BaseURL != config.DefaultAnthropicBaseURL {
		t.Errorf("claude base_url = %q", cfg.Models.Providers["claude"].BaseURL)
	}
}

// /agents/x/mcp/ is /agents/x/mcp (and /mcp/ is /mcp): a trailing slash,
// which clients and proxies add, reaches the same endpoint.
func TestTrailingSlashEndpoint(t *testing.T) {
	g := newTestGateway(t, revertCfg)
	h := g.router()
	post := func(path, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.RemoteAddr, req.Host = "127.0.0.1:5000", "127.0.0.1:8200"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"hi"}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, c := range []struct{ path, body, want string }{
		{"/agents/echo/mcp", call, "hi"},
		{"/agents/echo/mcp/", call, "hi"},
		{"/agents/echo/mcp/", list, "get_health"},
	} {
		if code, body := post(c.path, c.body); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: HTTP %d %s, want 200 with %q", c.path, code, body, c.want)
		}
	}
	// agents_endpoint is off here: both say so, neither is "no route".
	code, body := post("/mcp", list)
	if code2, body2 := post("/mcp/", list); code2 != code || !strings.Contains(body2, "agents_endpoint is off") {
		t.Errorf("POST /mcp/: HTTP %d %s; /mcp: HTTP %d %s", code2, body2, code, body)
	}
}

// The inbound audit line of an initialize or a tools/list is written at
// policy.audit.listing (debug by default), a call's at policy.audit.calls
// (info), a refusal's at calls whatever it asked.
func TestInboundAuditLevels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	cfg := `
name: t
listen: "127.0.0.1:0"
auth:
  mode: tokens
  tokens:
    - {name: alice, token: alice-token-0123456789}
agents:
  echo: {model: passthrough}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.DebugLevel)
	g, err := New(Options{ConfigPath: path, Logger: zap.New(core), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() }) // a test has no load balancer to drain from
	h := g.router()
	post := func(token, body string) {
		req := httptest.NewRequest(http.MethodPost, "/agents/echo/mcp", strings.NewReader(body))
		req.RemoteAddr, req.Host = "127.0.0.1:5000", "127.0.0.1:8200"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	audit := func() []observer.LoggedEntry {
		var out []observer.LoggedEntry
		for _, e := range logs.TakeAll() {
			if e.Message == "policy decision" {
				out = append(out, e)
			}
		}
		return out
	}
	for _, c := range []struct {
		name, token, body string
		want              zapcore.Level
	}{
		{"initialize", "alice-token-0123456789", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, zapcore.DebugLevel},
		{"tools/list", "alice-token-0123456789", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, zapcore.DebugLevel},
		{"tools/call", "alice-token-0123456789", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"hi"}}}`, zapcore.InfoLevel},
		{"refused tools/list", "wrong-token-0123456789", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, zapcore.InfoLevel},
	} {
		post(c.token, c.body)
		var inbound []observer.LoggedEntry
		for _, e := range audit() {
			if e.ContextMap()["tool"] == "" {
				inbound = append(inbound, e)
			}
		}
		if len(inbound) != 1 || inbound[0].Level != c.want {
			t.Errorf("%s: inbound audit lines %v, want one at %s", c.name, inbound, c.want)
		}
	}
}

// A server's extra_blocked_headers are checked at load beside the global
// list: a forward_headers target it blocks is a file:line error.
func TestServerExtraBlockedHeaders(t *testing.T) {
	raw := `
name: t
policy: {extra_blocked_headers: [X-Global]}
mcp:
  servers:
    argos:
      url: http://127.0.0.1:1/mcp
      extra_blocked_headers: [X-Internal-*]
      forward_headers: {X-A: X-Internal-Tenant, X-B: X-Global, X-C: X-Tenant}
`
	_, err := config.Parse("t.yaml", []byte(raw), policyChecks)
	if err == nil {
		t.Fatal("blocked targets loaded")
	}
	for _, want := range []string{`t.yaml:9: mcp.servers.argos.forward_headers.X-A: target "X-Internal-Tenant" is a blocked header`,
		`t.yaml:9: mcp.servers.argos.forward_headers.X-B: target "X-Global" is a blocked header`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "X-C") {
		t.Errorf("an allowed target reported:\n%v", err)
	}
}
