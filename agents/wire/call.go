package wire

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Call is one tools/call as the server side hands it to the kind that
// answers it (Target.Answer): the caller's request, its JSON-RPC id and
// protocol, the multi round-trip members it carries, and whether a large
// result may come back streamed (Streams).
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
	// Sink is the caller's response as the endpoint that serves the call
	// tracks it (agents/endpoint's StreamTracker), on both paths, or nil
	// when none is tracked (Stream).
	Sink Sink

	stream *Stream // the caller's response (Serve), or nil
}

// Sink is the caller's tracked response: the events written to it so far,
// and a wait for more (a relay waits there for its notifications to be
// written before the call answers).
type Sink interface {
	Events() int
	WaitEvents(ctx context.Context, n int, timeout time.Duration)
}

// Stream is c's tracked response (Sink); nil for a nil c or when none is
// tracked.
func (c *Call) Stream() Sink {
	if c == nil {
		return nil
	}
	return c.Sink
}

// Streams reports that the downstream call made for c may return a
// large result streamed from its body (mcpclient.CallOptions.Stream), to
// be answered as a BodyAnswer, which the caller's response copies as it
// reads it (body.go): c is a fast-path call's (Serve) and the switch is
// on. A nil c does not.
func (c *Call) Streams() bool { return c != nil && c.stream != nil && Fast() }

// Notifier is where the notifications of c's tools/call go: c's stream
// (direct: it writes every notification it took before the answer), or,
// for a nil c (a call mcp-go's server runs), the mcp-go session of ctx;
// nil when there is neither. With keepMeta a "_meta" map in params is
// sent as the notification's _meta (notify.go); without, it is dropped,
// as mcp-go's SendNotificationToClient drops it (a proxy's relay of a
// downstream's notifications keeps mcp-go's shape on both paths).
func (c *Call) Notifier(ctx context.Context, keepMeta bool) (notify func(method string, params map[string]any) error, direct bool) {
	if c != nil && c.stream != nil {
		if keepMeta {
			return c.stream.NotifyWithMeta, true
		}
		return c.stream.Notify, true
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil, false
	}
	return func(method string, params map[string]any) error {
		if _, ok := params["_meta"]; !ok || !keepMeta {
			return srv.SendNotificationToClient(ctx, method, params)
		}
		return sendWithMeta(ctx, notificationOf(method, params))
	}, false
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
