package endpoint

// A session belongs to the principal that created it (agents/sessions):
// the endpoint mints the id at initialize, sealed for the caller, and
// answers a request that carries a sealed id of another principal (or of
// another agent, or sealed under another state key) as for an unknown
// session, before anything of the session is looked at: its pending
// server-to-client requests, its tracked calls, its log level.

import (
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

// mintSession returns the session id of r's caller, which declared caps.
func (e *Endpoint) mintSession(r *http.Request, caps string) string {
	return sessions.NewID(e.d.Requests.Tag, e.d.Agent, policy.IdentityFrom(r.Context()).Principal(), caps)
}

// refuseForeignSession answers r with 404 and a JSON-RPC error when the
// session id it carries is not its caller's; it reports whether it did. An
// initialize is never refused: it starts a new session, whatever id a
// client that lost its session still sends.
func (e *Endpoint) refuseForeignSession(w http.ResponseWriter, r *http.Request, msg *wire.Message) bool {
	sid := r.Header.Get(server.HeaderKeySessionID)
	if sid == "" || (msg != nil && msg.MethodName() == string(mcp.MethodInitialize)) {
		return false
	}
	if sessions.Check(e.d.Requests.Tag, e.d.Agent, policy.IdentityFrom(r.Context()).Principal(), sid) != sessions.Foreign {
		return false
	}
	if m := e.d.Requests.metrics.Load(); m != nil {
		m.SessionRejections.WithLabelValues("foreign").Inc()
	}
	var id []byte
	if msg != nil && msg.MethodName() != "" {
		id = msg.ID
	}
	if len(id) == 0 {
		id = []byte("null")
	}
	writeRPCError(w, http.StatusNotFound, id, mcp.INVALID_REQUEST,
		fmt.Sprintf("unknown session %q: it was not created by this caller through this gateway; initialize a new session", sid))
	return true
}
