package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newSIDDown is a stateful Go SDK downstream whose tool "sid" answers the
// id of the downstream session that called it.
func newSIDDown(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "siddown", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "sid", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Session.ID()}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// sidText is the first text block of a JSON-RPC tools/call answer.
func sidText(t *testing.T, status int, msg map[string]any) string {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if status != http.StatusOK || len(content) == 0 {
		t.Fatalf("HTTP %d %v: want a result", status, msg)
	}
	block, _ := content[0].(map[string]any)
	return fmt.Sprint(block["text"])
}

// Through a proxy agent, two token callers of a server of session_scope
// caller (the default) are on two downstream sessions, each keeping its
// own; those of a shared server are on one; a call-scoped server gets a new
// session per call.
func TestSessionScopeThroughProxy(t *testing.T) {
	down := newSIDDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: scope
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
mcp:
  servers:
    own: {url: %[1]q}
    pool: {url: %[1]q, session_scope: shared}
    each: {url: %[1]q, session_scope: call}
agents:
  own: {kind: proxy, servers: [own]}
  pool: {kind: proxy, servers: [pool]}
  each: {kind: proxy, servers: [each]}
`, down))
	id := 0
	sid := func(agent, who string) string {
		t.Helper()
		id++
		status, msg := agentCallBearer(t, g.Base+"/agents/"+agent+"/mcp", who+"-token-0123456789abcdef", "sid", id, map[string]any{}, map[string]any{}, nil)
		return sidText(t, status, msg)
	}
	web, ops := sid("own", "web"), sid("own", "ops")
	if web == ops {
		t.Errorf("caller scope: web and ops share downstream session %q", web)
	}
	if again := sid("own", "web"); again != web {
		t.Errorf("caller scope: web's second call on %q, its first on %q", again, web)
	}
	if web, ops := sid("pool", "web"), sid("pool", "ops"); web != ops {
		t.Errorf("shared scope: web on %q, ops on %q: want one session", web, ops)
	}
	if first, second := sid("each", "web"), sid("each", "web"); first == second {
		t.Errorf("call scope: two calls on one session %q", first)
	}
}

// In passthrough mode an anonymous caller's downstream session follows its
// own Mcp-Session-Id: two sessions, two downstream sessions.
func TestSessionScopeAnonymousFollowsInboundSession(t *testing.T) {
	down := newSIDDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: scope-anon
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
mcp:
  servers:
    own: {url: %q}
agents:
  own: {kind: proxy, servers: [own]}
`, down))
	url := g.Base + "/agents/own/mcp"
	session := func() string {
		t.Helper()
		resp, err := post(url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
			`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	call := func(inbound string) string {
		t.Helper()
		resp, err := post(url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sid","arguments":{}}}`,
			map[string]string{"Mcp-Session-Id": inbound, "Mcp-Protocol-Version": "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var msg map[string]any
		_ = json.Unmarshal([]byte(sseData(string(raw))), &msg)
		return sidText(t, resp.StatusCode, msg)
	}
	a, b := session(), session()
	if a == "" || a == b {
		t.Fatalf("inbound sessions %q and %q", a, b)
	}
	da, db := call(a), call(b)
	if da == db {
		t.Errorf("two anonymous sessions share downstream session %q", da)
	}
	if again := call(a); again != da {
		t.Errorf("session a's second call on %q, its first on %q", again, da)
	}
}
