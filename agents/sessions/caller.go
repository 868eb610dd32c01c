package sessions

// The caller a downstream session belongs to (a server's session_scope
// caller, agents/mcpclient): the principal of the request (a token's name,
// a JWT subject), else the agent_id a passthrough toolbox caller named,
// else an anonymous caller's inbound session id, else Anonymous. The
// endpoint records the inbound session id, the toolbox the agent_id; the
// gateway's downstream clients read Caller.

import (
	"context"

	"github.com/pallasgw/pallasgw/policy"
)

// Anonymous is the caller of a request that names nobody.
const Anonymous = "anonymous"

type inboundKey struct{}

type agentIDKey struct{}

// WithInbound returns ctx carrying the Mcp-Session-Id its request came
// with (one the endpoint checked is the caller's).
func WithInbound(ctx context.Context, sessionID string) context.Context {
	if sessionID == "" {
		return ctx
	}
	return context.WithValue(ctx, inboundKey{}, sessionID)
}

// WithAgentID returns ctx carrying the agent_id a passthrough caller named
// itself with.
func WithAgentID(ctx context.Context, agentID string) context.Context {
	if agentID == "" {
		return ctx
	}
	return context.WithValue(ctx, agentIDKey{}, agentID)
}

// Caller is the caller of ctx a downstream session is scoped to. The
// prefixes keep the kinds apart (an agent_id "token:alice" is not the
// token alice). The key is a caller's name or session id: it is never
// logged nor used as a metric label.
func Caller(ctx context.Context) string {
	if p := policy.IdentityFrom(ctx).Principal(); p != "" {
		return p
	}
	if id, _ := ctx.Value(agentIDKey{}).(string); id != "" {
		return "agent:" + id
	}
	if sid, _ := ctx.Value(inboundKey{}).(string); sid != "" {
		return "session:" + sid
	}
	return Anonymous
}
