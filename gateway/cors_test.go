package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const corsCfg = `
name: t
listen: "127.0.0.1:0"
allowed_origins: ["http://ui.example.com"]
auth:
  mode: tokens
  tokens:
    - {name: ui, token: cors-test-token-0123456789, agents: ["*"]}
models:
  providers:
    local: {type: openai, base_url: "http://127.0.0.1:1/v1", api_key: k, forward_headers: {X-LLM-User: X-User}}
mcp:
  servers:
    tickets:
      url: http://127.0.0.1:1/mcp
      forward_headers: {X-Tenant-ID: X-Tenant-ID, X-Tickets-Token: Authorization}
agents:
  echo: {model: passthrough}
`

// A page on an allowed origin can call an agent: its preflight is answered
// before auth, and the answers let it read what an MCP client reads. Other
// origins get no CORS header (and the Origin guard's 403).
func TestCORS(t *testing.T) {
	g := newTestGateway(t, corsCfg)
	h := g.router()
	const ui = "http://ui.example.com"
	mcpHeaders := "authorization, content-type, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id, mcp-param-region"
	do := func(method, origin, token string, hdr map[string]string) *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req := httptest.NewRequest(method, "/agents/echo/mcp", strings.NewReader(body))
		req.RemoteAddr, req.Host = "192.0.2.1:5000", "gw.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	preflight := func(origin, headers string) *httptest.ResponseRecorder {
		return do(http.MethodOptions, origin, "", map[string]string{
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": headers})
	}
	hasAll := func(t *testing.T, what, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(strings.ToLower(got), strings.ToLower(w)) {
				t.Errorf("%s %q lacks %q", what, got, w)
			}
		}
	}

	t.Run("preflight of an allowed origin, before auth", func(t *testing.T) {
		rec := preflight(ui, mcpHeaders)
		if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != ui {
			t.Fatalf("%d, Access-Control-Allow-Origin %q: %s", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"), rec.Body)
		}
		hasAll(t, "Vary", strings.Join(rec.Header().Values("Vary"), ", "), "Origin")
		hasAll(t, "Access-Control-Allow-Methods", rec.Header().Get("Access-Control-Allow-Methods"), "POST")
		hasAll(t, "Access-Control-Allow-Headers", rec.Header().Get("Access-Control-Allow-Headers"), strings.Split(mcpHeaders, ", ")...)
	})
	t.Run("preflight asking for the headers the config forwards", func(t *testing.T) {
		// A browser UI sends the per-user headers of forward_headers
		// (servers' and providers'), whatever their case.
		forwarded := "x-tenant-id, X-Tickets-Token, x-llm-user, authorization, content-type"
		rec := preflight(ui, forwarded)
		if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != ui {
			t.Fatalf("%d, Access-Control-Allow-Origin %q: %v", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"), rec.Header())
		}
		hasAll(t, "Access-Control-Allow-Headers", rec.Header().Get("Access-Control-Allow-Headers"), strings.Split(forwarded, ", ")...)
	})
	t.Run("preflight asking for another header", func(t *testing.T) {
		// Neither an MCP header nor a forwarded one (an outbound name
		// of forward_headers is not one a caller sends).
		for _, hdr := range []string{"content-type, x-other", "x-tenant-id, x-user"} {
			if rec := preflight(ui, hdr); rec.Header().Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s allowed: %v", hdr, rec.Header())
			}
		}
	})
	t.Run("preflight of another origin", func(t *testing.T) {
		rec := preflight("http://evil.example.com", "content-type")
		if rec.Code != http.StatusForbidden || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%d %v", rec.Code, rec.Header())
		}
	})
	t.Run("call of an allowed origin", func(t *testing.T) {
		rec := do(http.MethodPost, ui, "cors-test-token-0123456789", nil)
		if rec.Code != http.StatusOK || rec.Header().Get("Access-Control-Allow-Origin") != ui || rec.Header().Get("Mcp-Session-Id") == "" {
			t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		hasAll(t, "Vary", strings.Join(rec.Header().Values("Vary"), ", "), "Origin")
		hasAll(t, "Access-Control-Expose-Headers", rec.Header().Get("Access-Control-Expose-Headers"),
			"Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate")
	})
	t.Run("refusal of an allowed origin is readable", func(t *testing.T) {
		rec := do(http.MethodPost, ui, "", nil)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("Access-Control-Allow-Origin") != ui || rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
	})
	t.Run("no Origin, no CORS", func(t *testing.T) {
		rec := do(http.MethodPost, "", "cors-test-token-0123456789", nil)
		if rec.Code != http.StatusOK || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%d %v", rec.Code, rec.Header())
		}
	})
}
