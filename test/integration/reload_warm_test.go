package integration

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// sessions counts the distinct sessions tools were called on, and whether
// the first of them was ended with a DELETE.
func (c *captureServer) sessions() (used int, firstDeleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, sid := range c.calls {
		seen[sid] = true
	}
	for _, h := range c.deletes {
		if len(c.calls) > 0 && h.Get("Mcp-Session-Id") == c.calls[0] {
			firstDeleted = true
		}
	}
	return len(seen), firstDeleted
}

// TestReloadKeepsWarmDownstreamSessions: a reload that does not change a
// server keeps its session; changing the server opens a new one and closes
// the old one.
func TestReloadKeepsWarmDownstreamSessions(t *testing.T) {
	llm := fakellm.New(t)
	down := newCaptureServer(t, "down")
	const cfg = `
name: warm
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 20ms, poll_interval: 0}
models:
  providers:
    openai: {base_url: "%s", api_key: k}
mcp:
  servers:
    down: {url: "%s/mcp", timeout: %s}
agents:
  a: {model: openai.fake-model, servers: [down], description: "%s"}
`
	g := startGateway(t, fmt.Sprintf(cfg, llm.OpenAIBaseURL(), down.URL, "30s", "v1"))
	useTool := func() {
		t.Helper()
		llm.Script(fakellm.ToolCalls(fakellm.Call{Name: "down__whoami"}), fakellm.Text("ok"))
		resp, err := post(g.Base+"/agents/a/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"go"}}}`, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("call: %v %v", err, resp.StatusCode)
		}
		resp.Body.Close()
	}
	useTool()
	opened, _ := down.sessions()
	if opened != 1 {
		t.Fatalf("downstream sessions opened = %d, want 1", opened)
	}
	g.writeConfig(t, fmt.Sprintf(cfg, llm.OpenAIBaseURL(), down.URL, "30s", "v2")) // agent changed, server not
	if code, ans := g.reload(t); code != 200 {
		t.Fatalf("reload: %d %v", code, ans)
	}
	useTool()
	if opened, _ := down.sessions(); opened != 1 {
		t.Fatalf("an unchanged server lost its session on reload: %d sessions opened", opened)
	}
	g.writeConfig(t, fmt.Sprintf(cfg, llm.OpenAIBaseURL(), down.URL, "31s", "v2")) // server changed
	if code, ans := g.reload(t); code != 200 {
		t.Fatalf("reload: %d %v", code, ans)
	}
	useTool()
	eventually(t, 10*time.Second, "new session opened and the old one closed", func() bool {
		used, firstDeleted := down.sessions()
		return used == 2 && firstDeleted
	})
}
