package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A session belongs to the caller that created it: another token's request
// with its id is answered as for an unknown session (404, a JSON-RPC
// error), on the replica that minted it and on another that shares the
// state key, including an answer posted to a server-to-client request; the
// creator's own requests are served on both.
func TestSessionBelongsToItsCreator(t *testing.T) {
	d := newRelayDown(t)
	cfg := fmt.Sprintf(`
name: owned
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, d.ts.URL)
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	bearer := func(who string) string { return "Bearer " + who + "-token-0123456789abcdef" }
	resp, err := post(a.Base+"/agents/px/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`, map[string]string{"Authorization": bearer("web")})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if !strings.HasPrefix(sid, "pgw-e-") {
		t.Fatalf("session id %q: want one minted by the gateway", sid)
	}
	send := func(g *gw, who, body string) (int, map[string]any) {
		t.Helper()
		resp, err := post(g.Base+"/agents/px/mcp", body, map[string]string{"Authorization": bearer(who),
			"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var msg map[string]any
		_ = json.Unmarshal([]byte(sseData(string(raw))), &msg)
		return resp.StatusCode, msg
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	answer := `{"jsonrpc":"2.0","id":"pgw-r-0123456789abcdef01234567","result":{"action":"accept","content":{"name":"mallory"}}}`
	for i, g := range []*gw{a, b} {
		for _, c := range []struct{ name, body string }{{"tools/list", list}, {"an answer", answer}} {
			status, msg := send(g, "ops", c.body)
			e, _ := msg["error"].(map[string]any)
			if status != http.StatusNotFound || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "unknown session") {
				t.Errorf("replica %d, another caller's %s on the session: HTTP %d %v, want 404 and a JSON-RPC error", i, c.name, status, msg)
			}
		}
		if status, msg := send(g, "web", list); status != http.StatusOK || msg["result"] == nil {
			t.Errorf("replica %d, the creator's tools/list: HTTP %d %v", i, status, msg)
		}
		if v, _ := g.metric(t, `pallasgw_session_rejections_total{reason="foreign"}`); v != 2 {
			t.Errorf("replica %d: refusals counted %v, want 2", i, v)
		}
	}
}

// sseData is the last "data:" line of an SSE body that carries an id, or
// the body itself when it is plain JSON.
func sseData(body string) string {
	out := body
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(v, `"id"`) {
			out = v
		}
	}
	return out
}
