package endpoint

// tools/list of a ListGuard (a proxy agent whose server acts with each
// caller's own account): before the list, the kind may ask its caller to
// connect, as a call would. A session-based caller that declared URL-mode
// elicitation is asked on the list's response stream, and once it has
// connected it is told so there (notifications/elicitation/complete) and
// the list is answered on that stream, by the endpoint (mcp-go never sees
// a request whose stream carries another writer's event); one that cannot
// be asked gets the error a call gets: -32042 with the URL (2025-11-25),
// or an error whose text carries the URL. A 2026-07-28 caller's list then
// runs through the input-required bridge as a prompts/get does
// (bridge.ServeCatalog, bridge.Lister): an input-required round carrying
// the URL elicitation, or -32021 without elicitation.url.

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
	// Tools is the caller's tools/list, as mcp-go would answer it.
	Tools(ctx context.Context, inbound http.Header) []mcp.Tool
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
	ctx := r.Context()
	sc := scopeOf(ctx)
	relay := &mcpclient.Relay{Request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return e.Request(ctx, sc.sink(), nil, listing{}, method, params)
	}}
	t := sc.tracker
	if t != nil {
		// The gateway's own notifications of the list (the connection's
		// notifications/elicitation/complete) go on the stream it was
		// asked on, before the answer.
		relay.Notify = func(method string, params map[string]any) error {
			msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
			if err != nil {
				return err
			}
			return t.w.Inject(msg)
		}
	}
	before := 0
	if t != nil {
		before = t.Events()
	}
	err := g.GuardList(ctx, r.Header, relay)
	if asked := t != nil && t.Events() > before; asked {
		// The list's response is the stream the caller was asked on: its
		// answer goes there too, as an event, built here (the caller is
		// connected now: the list mcp-go would answer).
		var ans []byte
		if err == nil {
			if ans, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": mcp.ListToolsResult{Tools: g.Tools(ctx, r.Header)}}); err != nil {
				ans = nil
			}
		}
		if ans == nil {
			ans = listError(msg.ID, err)
		}
		_ = t.w.Inject(ans)
		return true
	}
	if err == nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(listError(msg.ID, err), '\n'))
	return true
}

// listError is the JSON-RPC error a tools/list of id is answered with when
// the guard refused it with err: -32042 with its URL elicitation for a
// 2025-11-25 caller, else an internal error whose message carries the URL
// (as mcp-go answers a handler's error).
func listError(id json.RawMessage, err error) []byte {
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		d := required.JSONRPCError().Error
		return wire.ErrorJSON(id, d.Code, err.Error(), d.Data)
	}
	return wire.ErrorJSON(id, mcp.INTERNAL_ERROR, err.Error(), nil)
}

// listing is the Sequencer of a tools/list: nothing but the endpoint's
// own request writes on its response before the answer.
type listing struct{}

func (listing) Exclusive(_ context.Context, write func() error) error { return write() }
