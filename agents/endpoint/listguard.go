package endpoint

// tools/list of a ListGuard (a proxy agent whose server acts with each
// caller's own account): before the list, the kind may ask its caller to
// connect, as a call would. A session-based caller that declared URL-mode
// elicitation is asked on the list's response stream and the list goes on
// once it has connected; one that cannot be asked gets the error a call
// gets: -32042 with the URL (2025-11-25), or an error whose text carries
// the URL. A 2026-07-28 caller's list then runs through the input-required
// bridge as a prompts/get does (bridge.ServeCatalog, bridge.Lister): an
// input-required round carrying the URL elicitation, or -32021 without
// elicitation.url.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// ListGuard is a target (Deps.Rounds) whose tools/list may need its
// caller to act first; for a 2026-07-28 caller it is a bridge.Lister too.
type ListGuard interface {
	// GuardList asks the caller of ctx through relay where it can, and
	// returns the error the list is answered with instead; nil: the list
	// goes on.
	GuardList(ctx context.Context, inbound http.Header, relay *mcpclient.Relay) error
}

// serveList answers a tools/list the target's ListGuard refuses or runs,
// and reports whether it did; when it reports false it has written
// nothing.
func (e *Endpoint) serveList(w http.ResponseWriter, r *http.Request, msg *wire.Message, rs *requestState) bool {
	g, ok := e.d.Rounds.(ListGuard)
	if !ok || wire.IsNull(msg.ID) {
		return false
	}
	if !rs.legacy {
		return e.bridge != nil && e.bridge.ServeCatalog(w, r, msg) // bridge.Lister
	}
	if !knownVersion(r.Header) {
		return false // mcp-go refuses it
	}
	relay := &mcpclient.Relay{Request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return e.Request(ctx, nil, listing{}, method, params)
	}}
	err := g.GuardList(r.Context(), r.Header, relay)
	if err == nil {
		return false
	}
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		d := required.JSONRPCError().Error
		wire.WriteError(w, http.StatusOK, msg.ID, d.Code, err.Error(), d.Data)
	} else {
		writeRPCError(w, http.StatusOK, msg.ID, mcp.INTERNAL_ERROR, err.Error()) // as mcp-go answers a handler's error
	}
	return true
}

// listing is the Sequencer of a tools/list: nothing but the endpoint's
// own request writes on its response before the answer.
type listing struct{}

func (listing) Exclusive(_ context.Context, write func() error) error { return write() }
