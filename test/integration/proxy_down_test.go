package integration

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// TestProxyServerDownIsAToolResult: a call of a proxy whose only server is
// down is no mistake of the caller's: a 2026-07-28 caller and a
// session-based one both get an isError tool result (HTTP 200) naming the
// server, why, and the request id, not -32602 (HTTP 400).
func TestProxyServerDownIsAToolResult(t *testing.T) {
	down := gwtest.FreePorts(t, 1)[0] // nothing listens there
	g := startGateway(t, `
name: down
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    gone: {url: "http://127.0.0.1:`+strconv.Itoa(down)+`/mcp", timeout: 5s}
agents:
  px: {kind: proxy, servers: [gone]}
`)
	url := g.Base + "/agents/px/mcp"
	status, msg := modernRequest(t, url, "tools/call", "send", 1,
		map[string]any{"name": "send", "arguments": map[string]any{}, "_meta": modernMeta(map[string]any{})}, "X-Request-Id", "rid-down-1")
	res, _ := msg["result"].(map[string]any)
	text := ""
	if content, _ := res["content"].([]any); len(content) == 1 {
		text, _ = content[0].(map[string]any)["text"].(string)
	}
	if status != http.StatusOK || res == nil || res["isError"] != true || res["resultType"] != "complete" ||
		!strings.Contains(text, "server gone is unavailable: ") || !strings.Contains(text, "(request id rid-down-1)") {
		t.Errorf("2026-07-28 caller: HTTP %d %v, want 200 and an isError result saying server gone is unavailable", status, msg)
	}

	cs := connect(t, url, "2025-11-25", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("session-based caller: %v, want an isError result", err)
	}
	if got := textOf(t, r); !r.IsError || !strings.Contains(got, "server gone is unavailable: ") {
		t.Errorf("session-based caller: isError %v %q", r.IsError, got)
	}
}
