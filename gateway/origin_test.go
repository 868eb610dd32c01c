package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The DNS-rebinding guard: an Origin passes when listed, or when both it
// and the Host are loopback names; everything else carrying an Origin is
// refused.
func TestOriginAllowed(t *testing.T) {
	listed := map[string]bool{"https://ui.example.com": true}
	star := map[string]bool{"*": true}
	cases := []struct {
		name    string
		allowed map[string]bool
		origin  string
		host    string
		want    bool
	}{
		{"rebinding: attacker name in both", nil, "http://evil.example.com", "evil.example.com", false},
		{"rebinding with ports", nil, "http://evil.example.com:8200", "evil.example.com:8200", false},
		{"foreign page calling localhost", nil, "http://evil.example.com", "localhost:8200", false},
		{"loopback page, rebound Host", nil, "http://localhost:8200", "evil.example.com", false},
		{"localhost both", nil, "http://localhost:8200", "localhost:8200", true},
		{"localhost no ports", nil, "http://localhost", "localhost", true},
		{"127.0.0.1 both", nil, "http://127.0.0.1:8200", "127.0.0.1:8200", true},
		{"mixed loopback names and ports", nil, "https://localhost:3000", "127.0.0.1:8200", true},
		{"ipv6 loopback", nil, "http://[::1]:3000", "[::1]:8200", true},
		{"ipv6 loopback without port", nil, "http://[::1]", "[::1]", true},
		{"upper case", nil, "http://LOCALHOST:1", "LocalHost:2", true},
		{"other 127/8 address is not a loopback name", nil, "http://127.0.0.2", "127.0.0.2", false},
		{"localhost suffix", nil, "http://localhost.evil.example.com", "localhost.evil.example.com", false},
		{"null origin", nil, "null", "localhost:8200", false},
		{"non-http scheme", nil, "file://localhost", "localhost", false},
		{"garbage", nil, "::::", "localhost", false},
		{"listed", listed, "https://ui.example.com", "gw.example.com", true},
		{"listed exactly, not by host", listed, "https://ui.example.com:444", "gw.example.com", false},
		{"not listed", listed, "https://evil.example.com", "gw.example.com", false},
		{"star", star, "http://evil.example.com", "evil.example.com", true},
	}
	for _, c := range cases {
		if got := originAllowed(c.allowed, c.origin, c.host); got != c.want {
			t.Errorf("%s: Origin %q Host %q -> %v, want %v", c.name, c.origin, c.host, got, c.want)
		}
	}
}

// The Origin guard holds on every route but the public metadata: a foreign
// page (or Origin: null) cannot post /-/reload, nor read /-/status,
// /debug/pprof/, /metrics or the registry; server cards stay readable.
func TestOriginGuardEveryRoute(t *testing.T) {
	g := newTestGateway(t, revertCfg)
	h := g.router()
	do := func(method, path, origin, host string) int {
		req := httptest.NewRequest(method, path, strings.NewReader("x=1"))
		req.RemoteAddr, req.Host = "127.0.0.1:5000", host
		req.Header.Set("Content-Type", "text/plain")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, c := range []struct {
		method, path string
	}{
		{"POST", "/-/reload"}, {"GET", "/-/status"}, {"GET", "/debug/pprof/"}, {"GET", "/debug/pprof/cmdline"},
		{"GET", "/metrics"}, {"GET", "/healthz"}, {"GET", "/.well-known/mcp/server.json"}, {"POST", "/agents/echo/mcp"},
	} {
		for _, origin := range []string{"http://evil.example.com", "null"} {
			if code := do(c.method, c.path, origin, "localhost:8200"); code != http.StatusForbidden {
				t.Errorf("%s %s with Origin %s: %d, want 403", c.method, c.path, origin, code)
			}
		}
	}
	if code := do("GET", "/-/status", "http://localhost:3000", "localhost:8200"); code != http.StatusOK {
		t.Errorf("/-/status from a loopback page: %d", code)
	}
	// DNS rebinding: same origin, so no Origin on a GET; the Host is the
	// attacker's name.
	for _, path := range []string{"/-/status", "/debug/pprof/cmdline"} {
		if code := do("GET", path, "", "evil.example.com:8200"); code != http.StatusForbidden {
			t.Errorf("%s with a rebound Host: %d, want 403", path, code)
		}
	}
	if code := do("GET", "/agents/echo/mcp/server-card", "http://evil.example.com", "gw.example.com"); code != http.StatusOK {
		t.Errorf("server card for a foreign page: %d, want 200", code)
	}
}
