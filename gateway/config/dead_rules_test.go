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

// In auth mode passthrough a rule named after no token is keyed by the
// agent_id a toolbox caller sends: listed as information, neither a
// warning nor, with policy.strict, an error. Without a toolbox agent no
// caller can send one, and the rule is dead as before.
func TestAgentIDRulesAreInformation(t *testing.T) {
	const cfg = `name: t
policy:
  strict: %s
  callers:
    researcher: {servers: [files]}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
agents:
  tb: {kind: toolbox, servers: [files]}
`
	for _, strict := range []string{"false", "true"} {
		c, err := Parse("p.yaml", []byte(strings.Replace(cfg, "%s", strict, 1)))
		if err != nil {
			t.Fatalf("strict %s: %v", strict, err)
		}
		if len(c.Warnings) != 0 {
			t.Errorf("strict %s: warnings %q", strict, c.Warnings)
		}
		want := `p.yaml:5: policy.callers.researcher: applies to the toolbox callers that send agent_id "researcher" (tb; auth mode passthrough)`
		if len(c.Infos) != 1 || c.Infos[0] != want {
			t.Errorf("strict %s: infos %q, want %q", strict, c.Infos, want)
		}
	}
	noToolbox := strings.Replace(strings.Replace(cfg, "%s", "false", 1), "kind: toolbox, ", "kind: proxy, ", 1)
	c, err := Parse("p.yaml", []byte(noToolbox))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Infos) != 0 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "policy.callers.researcher: in auth mode passthrough a rule is named by the agent_id a toolbox caller sends, and no agent is a toolbox") {
		t.Errorf("without a toolbox: warnings %q, infos %q", c.Warnings, c.Infos)
	}
}
