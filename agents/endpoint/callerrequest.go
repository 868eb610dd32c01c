package endpoint

// Server-to-client requests the endpoint sends a caller itself: a proxied
// downstream's elicitation/create, sampling/createMessage and roots/list
// (see endpoint.go for why not through mcp-go). Each goes on the response stream of the caller's
// request it is for, with an id of the endpoint's own, and waits for the
// caller's answer, which Endpoint.ServeHTTP hands to CallerRequests.take
// before mcp-go sees it (asks.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// requestIDPrefix starts the ids of the endpoint's own requests; mcp-go's
// are numbers.
const requestIDPrefix = "pgw-r-"

// Sequencer orders a request the endpoint writes on a caller's response
// with the call's notifications: Exclusive runs write once every
// notification sent so far is written, holds further ones back meanwhile,
// and refuses once the call has ended (agents/relay's *Relay; package agents'
// Reporter for the tool loop's progress).
type Sequencer interface {
	Exclusive(ctx context.Context, write func() error) error
}

// Request sends method with params to the caller of a call, on sink, the
// call's tracked response (wire.Call.Sink; nil: none, the request is
// refused), and returns the caller's result; for a
// 2026-07-28 caller of a bridged call (Deps.Rounds) it becomes an
// input_required round instead: rounds, the call's round-trip state
// (wire.Call.Rounds), asks it (nil: the call is not bridged). seq orders
// the request with the call's notifications (never into one); it may be
// nil on the fast path, whose stream orders the write itself. Reasons it
// cannot be sent are *mcpclient.RPCError (for the downstream that asked),
// as is the caller's own error answer.
func (e *Endpoint) Request(ctx context.Context, sink wire.Sink, rounds wire.Rounds, seq Sequencer, method string, params json.RawMessage) (json.RawMessage, error) {
	if rounds != nil { // a 2026-07-28 caller's bridged call: input-required (agents/bridge)
		return rounds.Ask(ctx, method, params)
	}
	t, _ := sink.(*StreamTracker) // this package's (TrackStream)
	var rs *requestState
	if t != nil {
		rs = t.state
	}
	err := canRequest(rs, t, method, params)
	if err == nil && seq == nil && !t.w.FastCall() {
		// Without a sequencer the write cannot be ordered with mcp-go's
		// writes of the call's notifications. The fast path's stream
		// orders it itself: after the notifications it took, never after
		// the answer.
		err = errors.New("the call has no notification stream")
	}
	if err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INVALID_REQUEST,
			Message: fmt.Sprintf("%s is not available through pallasgw for this call: %v", method, err)}
	}
	asks := &e.d.Requests.asks
	id, wait, err := asks.expect(rs.sessionID)
	if err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
	}
	defer asks.forget(id)
	msg, err := wire.RequestJSON(id, method, params)
	if err != nil {
		return nil, err
	}
	if ss, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig); ok && !t.w.FastCall() {
		// mcp-go's call: its answer must be a stream now, which mcp-go
		// writes itself as an SSE event once its session is upgraded (as a
		// notification of its own upgrades it), before the first injection.
		ss.UpgradeToSSEWhenReceiveNotification()
	}
	write := func() error { return t.w.Inject(msg) } // on the fast path, ordered by its stream
	send := write
	if seq != nil {
		send = func() error { return seq.Exclusive(ctx, write) }
	}
	if err := send(); err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR,
			Message: fmt.Sprintf("%s could not be sent to the caller: %v", method, err)}
	}
	// The downstream client gives a server's request a deadline (mcp-go's:
	// 30 s) and posts the answer with that context: stop waiting a little
	// before it, so that the downstream still gets an error, not silence.
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-answerMargin))
		defer cancel()
	}
	select {
	case raw := <-wait:
		return answerResult(raw)
	case <-wctx.Done():
		if ctx.Err() == nil {
			return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR,
				Message: fmt.Sprintf("the caller did not answer %s in time", method)}
		}
		return nil, fmt.Errorf("waiting for the caller's answer to %s: %w", method, context.Cause(ctx))
	}
}

// answerMargin is how long before the downstream client's deadline a
// request stops waiting for the caller.
const answerMargin = time.Second

// Reasons a request cannot be sent to a caller.
var (
	errRequestModern = errors.New("the caller speaks MCP 2026-07-28, which has no server-to-client requests " +
		"(multi round-trip requests replace them); pallasgw does not relay those")
	errRequestNoSession = errors.New("the caller has no session id from pallasgw (it did not initialize " +
		"through it), so its answer could not be routed")
	errRequestNoSSE = errors.New("the caller's request does not accept an SSE response, so nothing can be sent " +
		"to it before the result")
)

func canRequest(rs *requestState, t *StreamTracker, method string, params json.RawMessage) error {
	name, ok := bridge.Capability(method)
	switch {
	case !ok:
		return fmt.Errorf("%s is not relayed", method)
	case rs == nil || !rs.legacy:
		return errRequestModern
	case rs.sessionID == "":
		return errRequestNoSession
	case !sessionDeclared(rs.sessionID, name[0]): // its letter: e, s, r
		return fmt.Errorf("the caller did not declare the %s capability when it initialized", name)
	case name == "elicitation" && urlMode(params) && !sessionDeclared(rs.sessionID, capElicitationURL):
		return errors.New("the caller did not declare URL-mode elicitation (elicitation.url) when it initialized")
	case !rs.acceptSSE || t == nil || t.w == nil:
		return errRequestNoSSE
	}
	return nil
}

// urlMode reports an elicitation/create in URL mode.
func urlMode(params json.RawMessage) bool {
	var p struct {
		Mode string `json:"mode"`
	}
	return json.Unmarshal(params, &p) == nil && p.Mode == string(mcp.ElicitationModeURL)
}

// answerResult returns the result of a caller's JSON-RPC response, or its
// error as an *mcpclient.RPCError.
func answerResult(raw json.RawMessage) (json.RawMessage, error) {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("the caller's answer: %w", err)
	}
	if resp.Error != nil {
		return nil, &mcpclient.RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}
