package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// quotingDown is a raw MCP server (tools and tasks) whose JSON-RPC errors
// quote the X-Api-Key they were sent, in the message and in data.
func quotingDown(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(b, &m)
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		key := r.Header.Get("X-Api-Key")
		var result any
		switch m.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-11-25", "serverInfo": map[string]any{"name": "quoting", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
					"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "t", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "needs", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "mk", "inputSchema": map[string]any{"type": "object"}}}}
		case "tools/call":
			if strings.Contains(string(b), `"mk"`) { // creates a task; reading it fails
				result = map[string]any{"task": map[string]any{"taskId": "abc", "status": "working", "ttl": 1000,
					"createdAt": "2026-11-25T00:00:00Z", "lastUpdatedAt": "2026-11-25T00:00:00Z"}}
				break
			}
			fallthrough
		default:
			code := -32602
			if strings.Contains(string(b), `"needs"`) {
				code = -32021 // a missing client capability: passed to a 2026-07-28 caller as it is
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"bad key %s","data":{"requiredCapabilities":{"elicitation":{}},"key":%q}}}`,
				m.ID, code, key, key)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// A downstream's JSON-RPC error that quotes the gateway's credential
// reaches the caller redacted on every path that passes the error's
// message and data on: a plain call, a task-augmented call, tasks/get and
// tasks/result, and a -32021 answered to a 2026-07-28 caller.
func TestDownstreamRPCErrorsScrubbed(t *testing.T) {
	const secret = "gw-secret-KEY-123456"
	d := quotingDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: scrub
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
mcp:
  servers:
    quoting: {url: %q, headers: {X-Api-Key: %s}}
agents:
  px: {kind: proxy, servers: [quoting]}
`, d.URL, secret))
	px := g.Base + "/agents/px/mcp"
	_, msg := taskRPC(t, px, "web", "tools/call", map[string]any{"name": "mk", "arguments": map[string]any{}, "task": map[string]any{"ttl": 1000}})
	task, _ := rpcResult(t, "create", msg)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	for _, c := range []struct {
		name, method string
		params       map[string]any
	}{
		{"call", "tools/call", map[string]any{"name": "t", "arguments": map[string]any{}}},
		{"task-augmented call", "tools/call", map[string]any{"name": "t", "arguments": map[string]any{}, "task": map[string]any{"ttl": 1000}}},
		{"missing capability", "tools/call", map[string]any{"name": "needs", "arguments": map[string]any{}}},
		{"tasks/get", "tasks/get", map[string]any{"taskId": id}},
		{"tasks/result", "tasks/result", map[string]any{"taskId": id}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, msg := taskRPC(t, px, "web", c.method, c.params)
			b, _ := json.Marshal(msg)
			if strings.Contains(string(b), secret) || !strings.Contains(string(b), "redacted") {
				t.Errorf("the caller got %s, want the key redacted", b)
			}
		})
	}
	if strings.Contains(g.Logs(), secret) {
		t.Errorf("the key reached the log")
	}
}
