package integration

import (
	"context"
	"strings"
	"testing"
	"time"
)

const subAgentPolicyCfg = `
name: sp
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: bob, token: bob-token-0123456789abcdef, agents: ["via_*", trusted_chain, echo]}
    - {name: carol, token: carol-token-0123456789abcdef}
policy:
  callers:
    carol: {agents: ["via_*", trusted_chain, echo]}
models: {default: passthrough}
agents:
  claude: {}
  echo: {}
  via_chain: {kind: chain, sequence: [echo, claude]}
  via_router: {kind: router, agents: [claude]}
  via_parallel: {kind: parallel, fan_out: [claude], fan_in: echo}
  trusted_chain: {kind: chain, sequence: [claude], run_as: workflow}
`

// A caller denied agent claude (by its token's agents, or by its
// policy.callers rule) cannot run claude through a chain, a router or a
// parallel agent it may call: the caller's agent rules hold for every
// agent run on its behalf. A workflow with run_as: workflow runs its
// agents as itself.
func TestSubAgentsHeldToCallersRules(t *testing.T) {
	g := startGateway(t, subAgentPolicyCfg)
	for _, caller := range []string{"bob", "carol"} {
		token := caller + "-token-0123456789abcdef"
		t.Run(caller, func(t *testing.T) {
			if _, err := bearerSession(t, g.Base+"/agents/claude/mcp", token); err == nil {
				t.Fatal("the caller reached claude directly")
			}
			for _, via := range []string{"via_chain", "via_router", "via_parallel"} {
				cs, err := bearerSession(t, g.Base+"/agents/"+via+"/mcp", token)
				if err != nil {
					t.Fatalf("%s: %v", via, err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				got, err := call(ctx, cs, "send_message", map[string]any{"message": "secret plan"})
				cancel()
				msg := got
				if err != nil {
					msg = err.Error()
				}
				if !strings.Contains(msg, "may not use agent claude") {
					t.Errorf("%s ran claude for %s: %q", via, caller, msg)
				}
			}
			cs, err := bearerSession(t, g.Base+"/agents/trusted_chain/mcp", token)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if got, err := call(ctx, cs, "send_message", map[string]any{"message": "hi"}); err != nil || got != "hi" {
				t.Errorf("run_as: workflow: %q %v", got, err)
			}
		})
	}
	audited := 0
	for _, line := range strings.Split(g.allLogs(), "\n") {
		if strings.Contains(line, `"policy decision"`) && strings.Contains(line, `"agent":"claude"`) && strings.Contains(line, `"decision":"deny"`) {
			audited++
		}
	}
	if audited < 8 { // 2 callers × (direct, 3 workflows)
		t.Errorf("%d refusals of claude audited, want 8", audited)
	}
}
