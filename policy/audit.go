package policy

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// Audit log field keys.
const (
	fieldRequestID  = "request_id"
	fieldCaller     = "caller"
	fieldAgent      = "agent"
	fieldTool       = "tool"
	fieldDecision   = "decision"
	fieldDurationMS = "duration_ms"
	fieldOutcome    = "outcome"
	fieldRule       = "rule"
	fieldResultSize = "result_bytes"
)

// Outcomes of the audit line: what became of a decided use.
const (
	OutcomeAllow   = "allow"   // allowed (and, for a tool, it answered)
	OutcomeDeny    = "deny"    // refused by policy
	OutcomeError   = "error"   // allowed; the call failed or its result is an error
	OutcomeTimeout = "timeout" // allowed; the call ran out of time
)

// AuditOutcome maps a call's metric outcome (ok, error, denied, timeout,
// canceled, unavailable) onto the audit outcomes.
func AuditOutcome(callOutcome string) string {
	switch callOutcome {
	case "ok":
		return OutcomeAllow
	case "denied":
		return OutcomeDeny
	case "timeout":
		return OutcomeTimeout
	}
	return OutcomeError
}

// Decision label values of the audit line and of
// pallasgw_policy_decisions_total.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// reasonOther replaces, in the metric label only, a reason that does not
// look like one of this package's constants.
const reasonOther = "other"

// AuditEvent is one policy decision to record. Every field must be a name
// from the config or a bounded reason, never a header value or token.
type AuditEvent struct {
	// Listing marks an inbound request that runs nothing (initialize, a
	// list, ping): allowed, it is written at the Auditor's ListingLevel.
	Listing   bool
	RequestID string
	Caller    string // "" falls back to the Identity in the context
	Agent     string
	Server    string
	Tool      string
	Decision  Decision
	Latency   time.Duration
	// Outcome is one of the Outcome* constants, for a use audited after
	// it ran; "" means the decision's (allow or deny).
	Outcome string
	// ResultBytes is the size of a tool's result as the caller or the
	// model got it, logged for a Tool that was allowed.
	ResultBytes int
}

// Auditor records policy decisions (every decision is logged and
// counted). Nil Logger or Metrics record nothing of that kind. Safe for
// concurrent use.
type Auditor struct {
	Logger  *zap.Logger
	Metrics *metrics.Metrics
	// ListingLevel is the level of an allowed Listing event's line,
	// CallLevel that of every other line (policy.audit); zero: info.
	ListingLevel, CallLevel zapcore.Level
	// Callers names the callers the metric's caller label keeps (nil:
	// every caller is "other").
	Callers *CallerPolicy
}

// Record writes one line "policy decision" (at CallLevel, or ListingLevel
// for an allowed Listing event) with request_id, caller, agent, server,
// tool, decision ("allow"/"deny"), reason, rule (the config path that
// decided, when one did), outcome (allow, deny, error, timeout),
// result_bytes (an allowed tool's) and duration_ms, and increments
// pallasgw_policy_decisions_total{agent,decision,reason,caller}. A reason
// that is not a short snake_case word is counted as "other", and a caller
// the config does not name as "other", so that a careless or hostile
// caller cannot grow the label set.
func (a *Auditor) Record(ctx context.Context, e AuditEvent) {
	var rule string
	key := e.Caller // the policy key: a token name, a toolbox agent_id
	if ctx != nil {
		switch id := IdentityFrom(ctx); {
		case id.Claims != nil:
			// A JWT caller is decided by its rule (PolicyKey) and named by
			// its identity claim.
			e.Caller, rule, key = id.Caller, id.Rule, id.Rule
		case e.Caller == "":
			e.Caller, key = id.Caller, id.Caller
		}
	}
	verdict := DecisionDeny
	if e.Decision.Allowed {
		verdict = DecisionAllow
	}
	outcome := e.Outcome
	if outcome == "" {
		outcome = verdict
	}
	if a.Metrics != nil {
		a.Metrics.PolicyDecisions.WithLabelValues(e.Agent, verdict, metricReason(e.Decision.Reason), a.Callers.Label(key)).Inc()
	}
	if a.Logger != nil {
		ruleField, traceField, matched, size := zap.Skip(), zap.Skip(), zap.Skip(), zap.Skip()
		if rule != "" {
			ruleField = zap.String("caller_rule", rule)
		}
		if e.Decision.Rule != "" {
			matched = zap.String(fieldRule, e.Decision.Rule)
		}
		if e.Tool != "" && e.Decision.Allowed && e.Outcome != "" {
			size = zap.Int(fieldResultSize, e.ResultBytes)
		}
		if ctx != nil {
			traceField = tracing.LogField(ctx)
		}
		level := a.CallLevel
		if e.Listing && e.Decision.Allowed {
			level = a.ListingLevel
		}
		ce := a.Logger.Check(level, "policy decision")
		if ce == nil {
			return
		}
		ce.Write(
			zap.String(fieldRequestID, e.RequestID),
			zap.String(fieldCaller, auditCaller(e.Caller)),
			zap.String(fieldAgent, e.Agent),
			zap.String(fieldServer, e.Server),
			zap.String(fieldTool, e.Tool),
			zap.String(fieldDecision, verdict),
			zap.String(fieldReason, e.Decision.Reason),
			matched,
			zap.String(fieldOutcome, outcome),
			size,
			zap.Float64(fieldDurationMS, float64(e.Latency)/float64(time.Millisecond)),
			ruleField, traceField,
		)
	}
}

// auditCaller is the caller an audit line names: "anonymous" for a caller
// with no identity (passthrough mode, no agent_id claimed).
func auditCaller(caller string) string {
	if caller == "" {
		return Anonymous
	}
	return caller
}

// metricReason returns reason when it is 1–40 characters of [a-z_], else
// reasonOther.
func metricReason(reason string) string {
	if reason == "" || len(reason) > 40 {
		return reasonOther
	}
	for i := 0; i < len(reason); i++ {
		if c := reason[i]; (c < 'a' || c > 'z') && c != '_' {
			return reasonOther
		}
	}
	return reason
}
