package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// Every error an agent endpoint answers is a JSON-RPC error with the
// message's id and the request id in its message, whoever found the
// problem: the gateway, the endpoint or mcp-go (which answers some in
// text/plain).
func TestErrorBodiesAreJSONRPC(t *testing.T) {
	g := newTestGateway(t, revertCfg)
	h := g.router()
	const list = `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	cases := []struct {
		name, method, contentType, version, body string
		status, code                             int
		id                                       string
	}{
		{"text/plain content type", "POST", "text/plain", "", list, 400, -32600, "7"},
		{"no content type", "POST", "", "", list, 400, -32600, "7"},
		{"form content type", "POST", "application/x-www-form-urlencoded", "2025-06-18", list, 400, -32600, "7"},
		{"unknown protocol version", "POST", "application/json", "1999-01-01", list, 400, -32022, "7"},
		{"unknown protocol version, string id", "POST", "application/json", "2024-01-01",
			`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, 400, -32022, `"a"`},
		{"unknown protocol version on a notification", "POST", "application/json", "1999-01-01",
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, -32022, "null"},
		{"unknown protocol version on a DELETE", "DELETE", "", "1999-01-01", "", 400, -32600, "null"},
		{"DELETE in the sessionless protocol", "DELETE", "", "2026-07-28", "", 405, -32600, "null"},
		{"not JSON", "POST", "application/json", "", "{", 400, -32700, "null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, "/agents/echo/mcp", strings.NewReader(c.body))
			req.RemoteAddr = "127.0.0.1:5000"
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			if c.version != "" {
				req.Header.Set("MCP-Protocol-Version", c.version)
			}
			req.Header.Set("Mcp-Session-Id", "pgw-0123")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json: %s", ct, rec.Body)
			}
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int             `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.JSONRPC != "2.0" {
				t.Fatalf("not a JSON-RPC error (%v): %s", err, rec.Body)
			}
			if string(got.ID) != c.id || got.Error.Code != c.code {
				t.Errorf("id %s code %d, want id %s code %d: %s", got.ID, got.Error.Code, c.id, c.code, rec.Body)
			}
			rid := rec.Header().Get("X-Request-Id")
			if rid == "" || !strings.Contains(got.Error.Message, "(request id "+rid+")") {
				t.Errorf("message %q does not carry the request id %q", got.Error.Message, rid)
			}
			if c.code == -32022 {
				var data struct {
					Supported []string `json:"supported"`
					Requested string   `json:"requested"`
				}
				if json.Unmarshal(got.Error.Data, &data) != nil || len(data.Supported) == 0 || data.Requested != c.version {
					t.Errorf("-32022 data %s: want the supported list and the requested version", got.Error.Data)
				}
			}
		})
	}
}
