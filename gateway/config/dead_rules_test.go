package config

import (
	"strings"
	"testing"
)

// Rules that select nothing are warnings without policy.strict: the config
// loads, and each finding names its line and key.
func TestDeadRulesWarn(t *testing.T) {
	const cfg = `name: t
auth:
  mode: tokens
  tokens:
    - {name: bob, token: bob-token-0123456789abcdef, agents: [echo, reserch]}
models: {default: passthrough}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
policy:
  callers:
    bob: {agents: ["ech*"], servers: [file]}
    bobb: {agents: [echo]}
  default: {agents: [ech0]}
agents:
  echo: {}
`
	c, err := Parse("p.yaml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.yaml:5: auth.tokens.0.agents.1: "reserch" matches no agent`,
		`p.yaml:12: policy.callers.bob.servers.0: "file" matches no server`,
		`p.yaml:13: policy.callers.bobb: no auth.tokens entry is named "bobb", so this rule applies to no caller`,
		`p.yaml:14: policy.default.agents.0: "ech0" matches no agent`,
	}
	got := strings.Join(c.Warnings, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("no warning %q in:\n%s", w, got)
		}
	}
	if n := len(c.Warnings); n != len(want) {
		t.Errorf("%d warnings, want %d:\n%s", n, len(want), got)
	}
}

// "*" (a token's default agents) says "all", whatever there is: no warning
// for a config without agents yet.
func TestDeadRulesStarIsAll(t *testing.T) {
	c, err := Parse("p.yaml", []byte("name: t\nauth:\n  mode: tokens\n  tokens:\n    - {name: web, token: web-token-0123456789}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings %q", c.Warnings)
	}
}
