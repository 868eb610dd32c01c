package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/gateway"
)

// writePallas writes a one-agent Pallas project whose
// fastagent.config.yaml has the given mcp.servers block.
func writePallas(t *testing.T, servers string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"agents.yaml":           "name: p\nagents:\n  helper: {module: agents.helper, port: 24301}\n",
		"fastagent.config.yaml": "default_model: openai.m\nmcp:\n  servers:\n" + servers,
		"agents/helper.py":      "@fast.agent(name=\"helper\", instruction=\"Help.\", servers=[\"fs\"])\ndef main(): ...\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pallasgw import maps a fast-agent server with a command and no
// transport to a stdio server (fast-agent's default and pallasgw's), and
// checks what it wrote as validate would: an output that does not load is
// an exit 1 with validate's messages, to stdout or to a file.
func TestImportValidatesItsOutput(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")

	t.Run("command without transport is stdio", func(t *testing.T) {
		dir := writePallas(t, "    fs:\n      command: npx\n      args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n")
		out := filepath.Join(t.TempDir(), "gw.yaml")
		var stderr strings.Builder
		if code := run([]string{"import", "--pallas", dir, "--out", out}, &strings.Builder{}, &stderr); code != 0 {
			raw, _ := os.ReadFile(out)
			t.Fatalf("import exited %d:\n%s\n%s", code, stderr.String(), raw)
		}
		cfg, err := gateway.LoadConfig(out)
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		if s := cfg.MCP.Servers["fs"]; s == nil || s.Transport != "stdio" || s.Command != "npx" || len(s.Args) != 3 {
			t.Errorf("server fs: %+v", s)
		}
	})

	for _, tc := range []struct{ name, out string }{{"to a file", "gw.yaml"}, {"to stdout", ""}} {
		t.Run("an output that does not load fails "+tc.name, func(t *testing.T) {
			// fast-agent lets a server without a url through until it
			// is used; pallasgw refuses the config.
			dir := writePallas(t, "    fs:\n      transport: sse\n")
			args := []string{"import", "--pallas", dir}
			if tc.out != "" {
				args = append(args, "--out", filepath.Join(t.TempDir(), tc.out))
			}
			var stdout, stderr strings.Builder
			code := run(args, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "does not validate") ||
				!strings.Contains(stderr.String(), "transport sse needs an http(s) url") {
				t.Errorf("import exited %d, stderr:\n%s", code, stderr.String())
			}
			if tc.out == "" && !strings.Contains(stdout.String(), "transport: sse") {
				t.Errorf("the config was not written to stdout:\n%s", stdout.String())
			}
		})
	}
}
