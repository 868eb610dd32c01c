package gateway

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// serve --agent keeps the agent and the agents it runs, transitively.
func TestKeepAgent(t *testing.T) {
	raw := `
name: t
agents:
  a: {}
  b: {}
  c: {}
  pipe: {kind: chain, sequence: [a, inner]}
  inner: {kind: parallel, fan_out: [b], fan_in: b}
`
	cfg, err := config.Parse("t.yaml", []byte(raw), policyChecks)
	if err != nil {
		t.Fatal(err)
	}
	if err := keepAgent(cfg, "pipe"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for n := range cfg.Agents {
		got = append(got, n)
	}
	if fmt.Sprint(sorted(got)) != "[a b inner pipe]" {
		t.Errorf("kept %v, want [a b inner pipe]", got)
	}
	cfg, _ = config.Parse("t.yaml", []byte(raw), policyChecks)
	if err := keepAgent(cfg, "nope"); err == nil || !strings.Contains(err.Error(), "--agent nope: no such agent") {
		t.Errorf("unknown agent: %v", err)
	}
}

func sorted(s []string) []string { sort.Strings(s); return s }
