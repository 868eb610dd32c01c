package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// callAs POSTs one raw 2026-07-28 tools/call of tool (no arguments,
// elicitation declared) with who's bearer token.
func callAs(t *testing.T, url, who, tool string, id int, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return callBearer(t, url, who+"-token-0123456789abcdef", tool, id, extra)
}

// callBearer is callAs with the bearer token given.
func callBearer(t *testing.T, url, bearer, tool string, id int, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return agentCallBearer(t, url, bearer, tool, id, map[string]any{}, elicitCaps, extra)
}

// A requestState is no bearer token: another caller (here one denied the
// tool) cannot finish the call with it, on the replica that holds the call
// or elsewhere; the caller it was issued to can.
func TestInputRequiredStateBoundToCaller(t *testing.T) {
	d := newRelayDown(t)
	cfg := fmt.Sprintf(`
name: mrtr
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
policy:
  callers:
    ops: {tools: {deny: ["down__ask"]}}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, d.ts.URL)
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	_, msg := callAs(t, a.Base+"/agents/px/mcp", "web", "ask", 1, nil)
	key, state := inputRequired(t, msg)
	retry := func(who string, id int) map[string]any {
		return map[string]any{"requestState": state,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": who}}}}
	}
	for _, g := range []*gw{a, b} {
		status, msg := callAs(t, g.Base+"/agents/px/mcp", "ops", "ask", 2, retry("mallory", 2))
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "another caller") {
			t.Errorf("another caller's retry: HTTP %d %v, want 400 and -32602 naming the caller", status, msg)
		}
		if v, _ := g.metric(t, `pallasgw_request_state_rejections_total{reason="mismatch"}`); v != 1 {
			t.Errorf("mismatches counted: %v, want 1", v)
		}
	}
	_, msg = callAs(t, a.Base+"/agents/px/mcp", "web", "ask", 3, retry("web", 3))
	if got := answerText(t, msg); !strings.Contains(got, "accept web") {
		t.Errorf("the caller's own retry answered %s", got)
	}
}
