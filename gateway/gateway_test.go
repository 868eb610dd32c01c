package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents/jsonrpc"
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
			msg, err := jsonrpc.Parse([]byte(c.body))
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
	if !c.waitZero(time.Millisecond) {
		t.Fatal("idle counter not zero")
	}
	c.add()
	if c.waitZero(10 * time.Millisecond) {
		t.Fatal("zero while a call runs")
	}
	go c.done()
	if !c.waitZero(5 * time.Second) {
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
