package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// serve --agent serves one agent; the transport of a server with a url is
// inferred (http); a .env beside the config is read, the process
// environment winning; every log line names the project; a downstream
// connection is logged when it is made.
func TestServeOneAgent(t *testing.T) {
	alpha := newPxServer(t, "alpha")
	dir, port := t.TempDir(), freePorts(t, 1)[0]
	cfg := fmt.Sprintf(`
name: proj15
listen: "127.0.0.1:%d"
mcp:
  servers:
    alpha: {url: "${ALPHA_URL}"}
agents:
  px: {kind: proxy, servers: [alpha], description: "${PX_DESCRIPTION}"}
  other: {description: "${OTHER_DESCRIPTION}"}
`, port)
	env := "ALPHA_URL=" + alpha.url() + "\nPX_DESCRIPTION=from dotenv\nOTHER_DESCRIPTION=other\n"
	for name, body := range map[string]string{"pallasgw.yaml": cfg, ".env": env} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := &gw{gwtest.Start(t, gwtest.Options{ConfigPath: filepath.Join(dir, "pallasgw.yaml"), Port: port,
		Env: []string{"PX_DESCRIPTION=from the process"}, Args: []string{"--agent", "px"}})}

	_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
	if !strings.Contains(reg, `"from the process"`) || !strings.Contains(reg, `"proj15/px"`) || strings.Contains(reg, `"proj15/other"`) {
		t.Errorf("registry: want px alone, described from the process environment:\n%s", reg)
	}
	if code, _, _ := httpGet(t, g.Base+"/agents/other/mcp", nil); code != 404 {
		t.Errorf("/agents/other/mcp answered %d, want 404 (not served)", code)
	}
	cs := connect(t, g.Base+"/agents/px/mcp", "", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || pxText(res) != "alpha:hi" {
		t.Fatalf("px/echo through the inferred http transport: %v %v", err, res)
	}
	if !g.logged(`"downstream connected"`) {
		t.Error("no log line for the downstream connection")
	}
	for _, line := range strings.Split(strings.TrimSpace(g.Logs()), "\n") {
		if strings.HasPrefix(line, "{") && !strings.Contains(line, `"project":"proj15"`) {
			t.Errorf("a log line without the project: %s", line)
		}
		if strings.Contains(line, "downstream connected") && (!strings.Contains(line, `"server":"alpha"`) || !strings.Contains(line, `"transport":"http"`)) {
			t.Errorf("connection line: %s", line)
		}
	}
}
