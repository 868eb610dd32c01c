package wire

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Call is one tools/call as the server side hands it to the kind that
// answers it (Target.Answer): the caller's request, its JSON-RPC id and
// protocol, the multi round-trip members it carries, and the permission
// to pass a large result through to the caller's response (PassThrough).
// What a call carries as behaviour travels here, not in its context; the
// caller's identity, trace, deadline and request id stay in the context
// (request-scoped data).
type Call struct {
	Req    mcp.CallToolRequest
	ID     any  // the JSON-RPC id (numbers as float64, as mcp-go decodes them)
	Modern bool // a 2026-07-28 caller
	// RoundTrip is a 2026-07-28 call's multi round-trip members as the
	// caller sent them (a RoundTripTarget's), or nil when it carries
	// none.
	RoundTrip *RoundTrip
	// ExtraParams and ExtraMeta are members the downstream tools/call made
	// for c adds beside name and arguments and in its _meta (the
	// input-required bridge's: a passed-back requestState and
	// inputResponses, the caller's declared client capabilities; a task),
	// or nil.
	ExtraParams, ExtraMeta map[string]json.RawMessage
	// Rounds is the call's round-trip state when the input-required bridge
	// runs it (agents/bridge), else nil: the kind's downstream requests to
	// the caller go there, and its checkpoint.
	Rounds Rounds

	stream *Stream     // the caller's response (Serve), or nil
	gate   func() bool // Gated's, or nil
}

// PassThrough lets the downstream call made for c pass a large result
// through to the caller's response (client.go, passthrough.go), or is nil
// when a result must be returned whole: c is not a fast-path call's
// (Serve), or the switch is off. self is the answering agent's identity
// (SelfJSON); before runs just before the answer is written (a relay's
// wait for the call's last notifications). A nil c has none.
func (c *Call) PassThrough(self json.RawMessage, before func()) *PassThrough {
	if c == nil || c.stream == nil || !Fast() {
		return nil
	}
	return &PassThrough{s: c.stream, self: self, before: before, gate: c.gate}
}

// Gated is c whose pass-through asks gate first, when its answer is about
// to begin: false, and the result is held and returned as it would be
// without a pass-through. The input-required bridge, which answers a
// call's first round itself when the downstream asks for input
// meanwhile, says so.
func (c *Call) Gated(gate func() bool) *Call {
	g := *c
	g.gate = gate
	return &g
}

// Rounds is a 2026-07-28 call's round-trip state, as the input-required
// bridge (agents/bridge) hands it to the kind in the call value: the
// downstream's server-to-client requests become input requests of a round
// the caller answers by a retry, which any replica may serve, continuing
// from the call's checkpoint.
type Rounds interface {
	// Ask sends the caller a downstream's elicitation/create,
	// sampling/createMessage or roots/list (params and result as JSON) and
	// returns its answer, given in a later round.
	Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Scoped is the state whose asks are keyed under scope: the tool call
	// or step they come from, so that a replay of that part alone finds
	// its answers.
	Scoped(scope string) Rounds
	// SetCheckpoint makes fn the checkpoint a retry continues from on a
	// replica that does not hold the call; fresh forgets the answers given
	// so far (they belong to work the checkpoint holds). It reports
	// whether the checkpoint is kept.
	SetCheckpoint(fresh bool, fn func() json.RawMessage) bool
	// TakeResume returns, once, the checkpoint the call continues from
	// (nil: it starts afresh).
	TakeResume() json.RawMessage
	// Unanswered reports an ask that ended without the caller's answer:
	// nobody will read the call's answer.
	Unanswered() bool
}
