package agents

// The audit lines of an agent's own tool calls: every tools/call an agent
// answers has a "policy decision" line with its request id, as the calls
// its tool loop, proxy and toolbox make downstream do. A send_message call
// is written once it has run (tool send_message, its outcome, the size of
// the answer); a call the endpoint refuses before any tool runs (a name
// the pins hide as awaiting approval or rejected, a proxy's server that
// cannot list its tools, a name no tool has) is written as refused, with
// the reason.

import (
	"context"
	"errors"
	"time"

	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/policy"
)

// Reasons of the refusals auditRefusal writes (and pins.RefusalReason's).
const (
	reasonToolNotFound      = "tool_not_found"
	reasonServerUnavailable = "server_unavailable"
)

// auditCall writes the line of one send_message call of the agent's that
// has run: outcome is the call's (ok, error, denied, timeout, canceled).
func (a *Agent) auditCall(ctx context.Context, rid, caller, outcome string, answerBytes int, start time.Time) {
	if a.set.deps.Auditor == nil {
		return
	}
	a.set.deps.Auditor.Record(ctx, policy.AuditEvent{RequestID: rid, Caller: caller, Agent: a.Name, Tool: a.Config.ToolName,
		Decision: policy.Decision{Allowed: true, Reason: policy.ReasonAllowed}, Outcome: policy.AuditOutcome(outcome),
		ResultBytes: answerBytes, Latency: time.Since(start)})
}

// auditRefusal writes the line of a tools/call of name that route refused
// with err.
func (a *Agent) auditRefusal(ctx context.Context, name string, err error) {
	if a.set.deps.Auditor == nil {
		return
	}
	ev := policy.AuditEvent{RequestID: RequestID(ctx), Agent: a.Name, Tool: name}
	var unavailable unavailableError
	switch {
	case errors.As(err, &unavailable):
		ev.Server, ev.Tool = unavailable.Unavailable()
		ev.Decision, ev.Outcome = policy.Decision{Allowed: true, Reason: reasonServerUnavailable}, policy.OutcomeError
	case pins.RefusalReason(err) != "":
		ev.Decision = policy.Decision{Reason: pins.RefusalReason(err)}
	default:
		ev.Decision = policy.Decision{Reason: reasonToolNotFound}
	}
	a.set.deps.Auditor.Record(ctx, ev)
}

// unavailableError is a refusal of a tool whose server cannot be reached
// (a proxy's): the audit line names the server and its tool.
type unavailableError interface {
	error
	Unavailable() (server, tool string)
}
