package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// admit holds an agent run on a caller's behalf by another agent (a
// chain's step, a router's choice, a parallel's fan_out and fan_in, an llm
// agent's agents) to the caller's agent rules, as if the caller had called
// it: its credential's (Deps.AllowAgent) and its policy.callers rule. A
// call the caller made itself (depth 0) was checked at the door. Below an
// agent with run_as: workflow nothing is checked: the workflow runs them as
// itself. Every decision is audited; a refusal is an errDenied.
func (a *Agent) admit(ctx context.Context, c *Call) error {
	defer func() {
		if a.Config.RunAs == config.RunAsWorkflow {
			c.asWorkflow = true // for the agents this one runs
		}
	}()
	if c.Depth == 0 || c.asWorkflow {
		return nil
	}
	start := time.Now()
	d := a.set.deps.Callers.AllowAgent(policy.CallerFrom(ctx), a.Name)
	if allow := a.set.deps.AllowAgent; d.Allowed && allow != nil {
		if cd := allow(ctx, a.Name); !cd.Allowed {
			d = cd
		}
	}
	if a.set.deps.Auditor != nil {
		a.set.deps.Auditor.Record(ctx, policy.AuditEvent{RequestID: c.RequestID, Agent: a.Name, Decision: d, Latency: time.Since(start)})
	}
	if !d.Allowed {
		return fmt.Errorf("%w: the caller may not use agent %s (%s)", errDenied, a.Name, d.Reason)
	}
	return nil
}
