package sessions

// The caller a downstream session belongs to (a server's session_scope
// caller, agents/mcpclient): the principal of the request (a token's name,
// a JWT subject), else the agent_id a passthrough toolbox caller named,
// else an anonymous caller's inbound session id, else Anonymous. The
// endpoint records the inbound session id, the toolbox the agent_id; the
// gateway's downstream clients read Caller.

import (
	"context"

	"github.com/pallasgw/pallasgw/agents/internal/ctxvalue"
	"github.com/pallasgw/pallasgw/policy"
)

// Anonymous is the caller of a request that names nobody.
const Anonymous = "anonymous"

// callerNames is what a request's context says of its caller besides its
// identity: one typed value under one key.
type callerNames struct {
	inbound string // the Mcp-Session-Id the request came with
	agentID string // the agent_id a passthrough caller named itself with
	caller  string // Caller's key of the two, made when they are set
}

// key is Caller's answer for n (without a principal): made once per
// request, not per read.
func (n *callerNames) key() {
	switch {
	case n.agentID != "":
		n.caller = "agent:" + n.agentID
	case n.inbound != "":
		n.caller = "session:" + n.inbound
	default:
		n.caller = ""
	}
}

func namesOf(ctx context.Context) callerNames { return ctxvalue.Of[callerNames](ctx) }

func withNames(ctx context.Context, edit func(*callerNames)) context.Context {
	return ctxvalue.With(ctx, edit)
}

// WithInbound returns ctx carrying the Mcp-Session-Id its request came
// with (one the endpoint checked is the caller's).
func WithInbound(ctx context.Context, sessionID string) context.Context {
	if sessionID == "" {
		return ctx
	}
	return withNames(ctx, func(n *callerNames) { n.inbound = sessionID; n.key() })
}

// WithAgentID returns ctx carrying the agent_id a passthrough caller named
// itself with.
func WithAgentID(ctx context.Context, agentID string) context.Context {
	if agentID == "" {
		return ctx
	}
	return withNames(ctx, func(n *callerNames) { n.agentID = agentID; n.key() })
}

// Caller is the caller of ctx a downstream session is scoped to. The
// prefixes keep the kinds apart (an agent_id "token:alice" is not the
// token alice). The key is a caller's name or session id: it is never
// logged nor used as a metric label.
func Caller(ctx context.Context) string {
	if p := policy.IdentityFrom(ctx).Principal(); p != "" {
		return p
	}
	if c := namesOf(ctx).caller; c != "" {
		return c
	}
	return Anonymous
}
