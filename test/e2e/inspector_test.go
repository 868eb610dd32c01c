//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inspector runs the MCP Inspector CLI (@modelcontextprotocol/inspector,
// Node 22) with args and returns its stdout; it fails the test on a
// non-zero exit.
func inspector(t *testing.T, args ...string) string {
	t.Helper()
	node := nodeBin(t)
	launcher := npmFile(t, "@modelcontextprotocol/inspector", "clients/launcher/build/index.js")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{launcher, "--cli"}, args...)...)
	// The CLI keeps a catalog under $HOME; keep it out of the real one.
	home := t.TempDir()
	cmd.Env = append(cmd.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, tail(stdout.String(), 4000), tail(stderr.String(), 4000))
	}
	return stdout.String()
}

// The Inspector CLI lists and calls a proxied tool, as a user would, with
// the gateway's bearer token passed by --header (auth mode tokens).
func TestInspectorCLIThroughProxy(t *testing.T) {
	everything := startEverything(t)
	gw := startGateway(t, fmt.Sprintf(`
name: inspector
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: inspector, token: inspector-token-0123456789}
mcp:
  servers:
    everything: {url: %q, timeout: 60s}
    other: {url: %q, timeout: 60s}
agents:
  tools: {kind: proxy, servers: [everything]}
  pair: {kind: proxy, servers: [everything, other], tools: {allow: ["everything__*"]}}
  box: {kind: toolbox, servers: [everything]}
`, everything, everything))
	auth := []string{"--header", "Authorization: Bearer inspector-token-0123456789"}

	for _, c := range []struct{ agent, prefix string }{{"tools", ""}, {"pair", "everything__"}} {
		t.Run(c.agent, func(t *testing.T) {
			url := gw.Base + "/agents/" + c.agent + "/mcp"
			var list struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			out := inspector(t, append([]string{url, "--transport", "http", "--method", "tools/list"}, auth...)...)
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("tools/list output is not JSON: %v\n%s", err, out)
			}
			names := map[string]bool{}
			for _, tl := range list.Tools {
				names[tl.Name] = true
			}
			if !names[c.prefix+"get-sum"] || !names[c.prefix+"echo"] || names["other__echo"] {
				t.Errorf("tools/list through the proxy: %v", names)
			}
			out = inspector(t, append([]string{url, "--transport", "http", "--method", "tools/call",
				"--tool-name", c.prefix + "get-sum", "--tool-arg", "a=2", "b=40"}, auth...)...)
			if !strings.Contains(out, "The sum of 2 and 40 is 42.") {
				t.Errorf("tools/call get-sum: %s", out)
			}
		})
	}

	t.Run("toolbox", func(t *testing.T) {
		url := gw.Base + "/agents/box/mcp"
		out := inspector(t, append([]string{url, "--transport", "http", "--method", "tools/call",
			"--tool-name", "get_server_tools", "--tool-arg", "server=everything", "pattern=get-*"}, auth...)...)
		if !strings.Contains(out, `get-sum`) || strings.Contains(out, `\"name\":\"echo\"`) {
			t.Errorf("get_server_tools pattern get-*: %s", out)
		}
	})

	// Without the token the gateway refuses the Inspector.
	cmd := exec.Command(nodeBin(t), npmFile(t, "@modelcontextprotocol/inspector", "clients/launcher/build/index.js"),
		"--cli", gw.Base+"/agents/tools/mcp", "--transport", "http", "--method", "tools/list")
	cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("the Inspector without a token got through:\n%s", out)
	}
}
