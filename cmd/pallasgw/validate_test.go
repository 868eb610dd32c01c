package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate lists a passthrough-mode rule keyed by a toolbox caller's
// agent_id as an "info:" line: no warning, and policy.strict accepts the
// config (exit 0).
func TestValidateListsAgentIDRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	cfg := `name: t
policy:
  strict: true
  callers:
    researcher: {servers: [files]}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
agents:
  tb: {kind: toolbox, servers: [files]}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"validate", "--config", path}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate exited %d:\n%s", code, stderr.String())
	}
	want := "info: " + path + `:5: policy.callers.researcher: applies to the toolbox callers that send agent_id "researcher"`
	if got := stderr.String(); !strings.HasPrefix(got, want) || strings.Contains(got, "warning:") {
		t.Errorf("validate's stderr:\n%s\nwant one line starting %q", got, want)
	}
}

// validate reports a missing pins file as serve does, at the pins key:
// "file:line: pins: message".
func TestValidateMissingPinsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(path, []byte("name: t\npins: pins.yaml\nagents:\n  echo: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"validate", "--config", path}, &stdout, &stderr); code != 1 {
		t.Fatalf("validate exited %d, want 1:\n%s", code, stderr.String())
	}
	want := path + ":2: pins: pins file " + filepath.Join(filepath.Dir(path), "pins.yaml") + ": file does not exist (create it with `pallasgw pins init`)\n"
	if got := stderr.String(); got != want {
		t.Errorf("validate's stderr:\n%s\nwant:\n%s", got, want)
	}
}
