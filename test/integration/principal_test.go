package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// What belongs to one caller is bound to its principal (its token's name,
// its JWT identity), not to the policy rule it falls under: two JWT users
// under one rule (or under none) are two callers.

// Bob cannot list, read or cancel the task Alice created, though no rule
// tells them apart.
func TestJWTUsersOwnTheirTasks(t *testing.T) {
	idp := newTestIDP(t)
	tasky := newTaskDown(t, true)
	t.Cleanup(func() { close(tasky.release) })
	g := startGateway(t, fmt.Sprintf(`
name: owners
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
auth:
  mode: jwt
  jwt: {issuer: %s}
mcp:
  servers:
    tasky: {url: %q}
agents:
  px: {kind: proxy, servers: [tasky]}
`, stateKeyB64, idp.URL, tasky.ts.URL))
	px := g.Base + "/agents/px/mcp"
	alice := "Bearer " + idp.token(t, "alice", px, nil)
	bob := "Bearer " + idp.token(t, "bob", px, nil)
	_, msg := taskRPC(t, px, "", "tools/call", map[string]any{"name": "hold", "arguments": map[string]any{},
		"task": map[string]any{"ttl": 600000}}, "Authorization", alice)
	task, _ := rpcResult(t, "create", msg)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		status, msg := taskRPC(t, px, "", m, map[string]any{"taskId": id}, "Authorization", bob)
		if code, text := rpcError(t, "bob "+m, msg); code != -32602 || status != http.StatusBadRequest || !strings.Contains(text, "not found") {
			t.Errorf("bob's %s of alice's task: %d %v %q", m, status, code, text)
		}
	}
	_, msg = taskRPC(t, px, "", "tasks/list", nil, "Authorization", bob)
	if listed, _ := json.Marshal(rpcResult(t, "bob's list", msg)["tasks"]); strings.Contains(string(listed), id) {
		t.Errorf("bob lists alice's task: %s", listed)
	}
	_, msg = taskRPC(t, px, "", "tasks/list", nil, "Authorization", alice)
	if listed, _ := json.Marshal(rpcResult(t, "alice's list", msg)["tasks"]); !strings.Contains(string(listed), id) {
		t.Errorf("alice does not list her task: %s", listed)
	}
}

// Bob cannot finish Alice's parked call with her requestState, though both
// fall under the rule staff.
func TestJWTUsersOwnTheirRequestState(t *testing.T) {
	idp := newTestIDP(t)
	d := newRelayDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: owners
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
auth:
  mode: jwt
  jwt: {issuer: %s}
policy:
  callers:
    staff: {match: {groups: staff}}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, idp.URL, d.ts.URL))
	px := g.Base + "/agents/px/mcp"
	staff := func(c jwt.MapClaims) { c["groups"] = []any{"staff"} }
	alice, bob := idp.token(t, "alice", px, staff), idp.token(t, "bob", px, staff)
	ask := func(bearer string, id int, extra map[string]any) (int, map[string]any) {
		return callBearer(t, px, bearer, "ask", id, extra)
	}
	_, msg := ask(alice, 1, nil)
	key, state := inputRequired(t, msg)
	retry := func(name string) map[string]any {
		return map[string]any{"requestState": state,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": name}}}}
	}
	status, msg := ask(bob, 2, retry("mallory"))
	if code, text := rpcError(t, "bob's retry", msg); code != -32602 || status != http.StatusBadRequest || !strings.Contains(text, "another caller") {
		t.Errorf("bob's retry with alice's state: %d %v %q", status, code, text)
	}
	_, msg = ask(alice, 3, retry("alice"))
	if got := answerText(t, msg); !strings.Contains(got, "accept alice") {
		t.Errorf("alice's own retry answered %s", got)
	}
}

// In jwt mode a toolbox caller is who its JWT says: agent_id (passthrough
// mode's self-naming) does not move it to another rule.
func TestJWTToolboxIgnoresAgentID(t *testing.T) {
	idp := newTestIDP(t)
	plain := newCaptureServer(t, "plain")
	g := startGateway(t, fmt.Sprintf(`
name: owners
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
auth:
  mode: jwt
  jwt: {issuer: %s}
policy:
  callers:
    readers: {match: {groups: readers}, tools: {deny: ["*"]}}
    admins: {match: {groups: admins}}
mcp:
  servers:
    plain: {url: %s/mcp}
agents:
  tb: {kind: toolbox, servers: [plain]}
`, idp.URL, plain.URL))
	url := g.Base + "/agents/tb/mcp"
	rita := "Bearer " + idp.token(t, "rita", url, func(c jwt.MapClaims) { c["groups"] = []any{"readers"} })
	_, msg := taskRPC(t, url, "", "tools/call", map[string]any{"name": "execute_tool",
		"arguments": map[string]any{"server": "plain", "tool": "whoami", "agent_id": "admins"}}, "Authorization", rita)
	b, _ := json.Marshal(msg)
	if !strings.Contains(string(b), "DENIED_BY_POLICY") {
		t.Errorf("a readers caller naming itself admins: %s", b)
	}
}
