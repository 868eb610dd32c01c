package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A toolbox with gateway_status answers get_gateway_status with what
// GET /-/status answers, to the callers it names; without it there is no
// such tool.
func TestToolboxGatewayStatus(t *testing.T) {
	g := startGateway(t, fmt.Sprintf(`
name: st
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: ops, token: ops-token-0123456789abcdef}
    - {name: web, token: web-token-0123456789abcdef}
mcp:
  servers:
    alpha: {url: "http://127.0.0.1:%d/mcp", headers: {X-Api-Key: alpha-secret-key-0123}}
agents:
  tb: {kind: toolbox, servers: [alpha], gateway_status: {enabled: true, callers: [ops]}}
  plain: {kind: toolbox, servers: [alpha]}
`, freePorts(t, 1)[0]))
	bearer := func(who string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + who + "-token-0123456789abcdef"}
	}
	ops := pxConnect(t, g.Base+"/agents/tb/mcp", "", bearer("ops"), nil)
	if names := pxToolNames(t, ops); !strings.Contains(strings.Join(names, ","), "get_gateway_status") {
		t.Fatalf("tools %v: no get_gateway_status", names)
	}
	o := tbCall(t, ops, "get_gateway_status", nil)
	_, _, raw := httpGet(t, g.Base+"/-/status", nil)
	var admin map[string]any
	if err := json.Unmarshal([]byte(raw), &admin); err != nil {
		t.Fatalf("/-/status: %v %s", err, raw)
	}
	if o.isError || o.structured["config_hash"] == nil || o.structured["config_hash"] != admin["config_hash"] {
		t.Fatalf("get_gateway_status = %+v, want /-/status's document (hash %v)", o, admin["config_hash"])
	}
	if agents, _ := o.structured["agents"].([]any); len(agents) != 2 {
		t.Errorf("agents %v", o.structured["agents"])
	}
	for _, secret := range []string{"alpha-secret-key-0123", "ops-token-0123456789abcdef"} {
		if strings.Contains(o.text, secret) {
			t.Errorf("the status shows a secret: %s", o.text)
		}
	}
	web := pxConnect(t, g.Base+"/agents/tb/mcp", "", bearer("web"), nil)
	if o := tbCall(t, web, "get_gateway_status", nil); !o.isError || o.code() != "DENIED_BY_POLICY" {
		t.Errorf("web (not in gateway_status.callers) got %+v", o)
	}
	plain := pxConnect(t, g.Base+"/agents/plain/mcp", "", bearer("ops"), nil)
	if names := pxToolNames(t, plain); strings.Contains(strings.Join(names, ","), "get_gateway_status") {
		t.Errorf("a toolbox without gateway_status lists %v", names)
	}
	if !g.logged(`"tool":"get_gateway_status","decision":"deny","reason":"tool_not_allowed","rule":"agents.tb.gateway_status.callers"`) {
		t.Error("no audit line for the refused status call")
	}
}
