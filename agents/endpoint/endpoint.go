// Package endpoint owns an agent's MCP endpoint: what turns one HTTP request
// into calls. It dispatches on the decoded JSON-RPC method (session ids,
// cancellation, callers' answers, the fast path, else mcp-go's Streamable
// HTTP server), sends server-to-client requests to session-based callers
// (CallerRequests), and wraps the response (TrackStream) so that the agent
// can wait for its notifications and error answers carry the request id.
// It is handed what it needs of an agent (Deps, and the interfaces of
// kinds.go that the kinds implement); it does not build agents, run their
// kinds or decide policy, and it imports no agent kind: agents and
// the kinds (agents/kinds/...) import it; of the project it imports
// agents/bridge (the input-required bridge of 2026-07-28 calls), agents/wire,
// agents/mcpclient, agents/sessions, policy and metrics.
package endpoint

// The agent's MCP endpoint: mcp-go's Streamable HTTP handler in stateless
// mode, plus what that mode lacks for session-based callers
// (protocol revisions before 2026-07-28):
//
//   - An initialize is answered with an Mcp-Session-Id minted here. mcp-go's
//     stateless mode issues none, and then treats whatever id a caller sends
//     only as a key: each request gets an ephemeral session under that id,
//     nothing is registered. The id is a correlation id, not state: any
//     replica accepts any id. With it, mcp-go keys in-flight requests by
//     "<session>:<request id>", so a caller's notifications/cancelled reaches
//     its own request, and the endpoint routes an answer to one of its
//     server-to-client requests only within the session it was sent to.
//     The id records the client capabilities the caller declared (below),
//     the one thing about a session that is needed later and that a
//     stateless server cannot otherwise know.
//   - mcp-go keeps per-session maps keyed by that id which a caller could
//     grow without bound by sending many ids: the log level of
//     logging/setLevel (never deleted in stateless mode) is the only one a
//     request writes, so a proxy agent answers logging/setLevel here
//     (forwarding the level downstream) and mcp-go never sees it; other
//     agents do not declare logging and mcp-go refuses it without storing
//     anything. The remaining map holds an entry only while a request runs
//     (mcp-go's in-flight cancel functions).
//   - A downstream's elicitation/create, sampling/createMessage and
//     roots/list during a call of a proxy's tool, a toolbox's execute_tool or
//     an llm agent's tool loop are sent to the caller by the endpoint itself
//     (request), on
//     the response stream of the request they are for, with ids of its own
//     ("pgw-r-…"), and the caller's answer (a POST of a JSON-RPC response) is
//     taken before mcp-go sees it. mcp-go would send sampling and roots only
//     on a standalone GET stream, which a stateless endpoint cannot offer
//     (every caller's GET would share one session key), and routes an
//     elicitation answer by session id alone, to one request of a session at
//     a time. Waiting requests are held in memory, so the answer must reach
//     the replica that asked. A 2026-07-28 caller gets them as an
//     input-required result instead (agents/bridge), whose retry any
//     replica can serve.
//   - A tools/call is offered to the fast path first (agents/wire), which
//     answers a proxy's and an agent's plain calls without mcp-go's server.
//   - Every request of a session-based caller is tracked under the key
//     mcp-go uses, "<session>:<id>", while it runs, in a table of the
//     gateway's (CallerRequests): the caller's notifications/cancelled
//     reaches a fast call, which mcp-go does not know of, and a call that
//     started before a reload, which the next snapshot's mcp-go does not
//     know of. The endpoint cancels the tracked call, then hands the
//     notification to mcp-go as before (which cancels its own call of that
//     key, if any, and answers 202).
//
// The session id records which of elicitation (and its URL mode), sampling
// and roots the caller declared when it initialized, and is sealed for the caller's
// principal (agents/sessions; sessionbind.go): "pgw-" + their letters +
// "-" + 128 random bits in hex + "." + the seal ("pgw-eus-…"), or "pgw-",
// the hex and the seal when none.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// Deps is what the endpoint is handed of its agent.
type Deps struct {
	Agent string                       // the agent's name
	MCP   *server.StreamableHTTPServer // mcp-go's Streamable HTTP server of the agent (stateless mode)
	Fast  wire.Target                  // the agent kind's fast tools/call, or nil
	// Rounds is the target whose tools/calls from 2026-07-28 callers run
	// through the input-required bridge (agents/bridge): a proxy's tools,
	// a toolbox's execute_tool, an llm agent's send_message; nil: none. It
	// may also implement ToolEnsurer and ParamHeaderChecker (kinds.go),
	// bridge.Catalog and bridge.InputRequiredPassThrough.
	Rounds wire.Target
	// SetLevel answers a session-based caller's logging/setLevel in place
	// of mcp-go (a proxy agent, which forwards the level downstream); nil:
	// mcp-go answers.
	SetLevel SetLevelAnswerer
	// Requests is the gateway's table of callers' pending answers and
	// running calls, shared by every snapshot.
	Requests *CallerRequests
	// Route reports why a tools/call of name cannot be dispatched for this
	// caller (nil: it can); the endpoint then answers with that error
	// itself. nil: mcp-go answers every name.
	Route func(ctx context.Context, name string, inbound http.Header) error
	// Tasks routes the tasks extension's requests (tasks.go); nil: mcp-go
	// answers them.
	Tasks TaskRouter
}

// Endpoint is an agent's http.Handler.
type Endpoint struct {
	d      Deps
	bridge *bridge.Bridge // Deps.Rounds' 2026-07-28 tools/call, prompts/get, resources/read (agents/bridge); nil without Rounds
	// What Deps.Rounds offers besides a wire.Target (kinds.go); nil: not
	// that.
	ensure ToolEnsurer
	params ParamHeaderChecker
}

// requestState is what the endpoint knows of one POST, for the agent's
// handlers (their context's Scope).
type requestState struct {
	legacy    bool   // session-based protocol revision (before 2026-07-28)
	sessionID string // legacy only
	acceptSSE bool
}

// Body is a request body already read whole (the gateway reads it to
// check it): the endpoint takes its bytes as they are, and mcp-go reads it
// as any body.
type Body struct {
	bytes.Reader
	b   []byte
	msg *wire.Message // b parsed, or nil
}

// NewBody is b as a request body, with msg its parsed message (nil when
// not parsed).
func NewBody(b []byte, msg *wire.Message) *Body {
	body := &Body{b: b, msg: msg}
	body.Reset(b)
	return body
}

// Close does nothing: the bytes stay readable.
func (*Body) Close() error { return nil }

// bufferedBody returns r's body and its message if parsed, reading the body
// when it is not a Body yet, and leaves r.Body readable from the start. It
// reports false when reading failed; r.Body then holds what was read.
func bufferedBody(r *http.Request) ([]byte, *wire.Message, bool) {
	if b, ok := r.Body.(*Body); ok && b.Len() == len(b.b) {
		return b.b, b.msg, true
	}
	body, err := io.ReadAll(r.Body)
	r.Body = NewBody(body, nil)
	return body, nil, err == nil
}

// New returns the endpoint of the agent d describes.
func New(d Deps) *Endpoint {
	e := &Endpoint{d: d}
	if d.Rounds != nil && d.Requests != nil {
		e.bridge = bridge.New(d.Requests.bridge, d.Agent, d.Rounds)
		e.ensure, _ = d.Rounds.(ToolEnsurer)
		e.params, _ = d.Rounds.(ParamHeaderChecker)
	}
	return e
}

func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if !e.refuseForeignSession(w, r, nil) && !wire.Refuse(w, r, nil) {
			e.serveMCP(w, r, nil)
		}
		return
	}
	body, msg, ok := bufferedBody(r)
	if !ok {
		wire.WriteError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "reading the request body failed", nil)
		return
	}
	if msg == nil {
		msg, _ = wire.Parse(body)
	}
	if e.refuseForeignSession(w, r, msg) {
		return
	}
	ctx := r.Context()
	if t := trackerOf(w); t != nil && scopeOf(ctx).tracker == nil {
		ctx = withScope(ctx, func(s *scope) { s.tracker = t })
	}
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" {
		// An anonymous caller's downstream sessions follow its own (session_scope caller).
		ctx = sessions.WithInbound(ctx, sid)
	}
	if ctx != r.Context() {
		r = r.WithContext(ctx) // one copy of the request for both
	}
	if msg == nil {
		if !wire.Refuse(w, r, nil) {
			e.serveMCP(w, r, body) // mcp-go answers the broken body
		}
		return
	}
	rs := &requestState{
		legacy: !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) &&
			!mcp.IsModernProtocol(msg.MetaString(mcp.MetaKeyProtocolVersion)),
		acceptSSE: strings.Contains(r.Header.Get("Accept"), "text/event-stream"),
	}
	method := msg.MethodName()
	if rs.legacy {
		switch {
		case method == "" && answersUs(msg):
			e.d.Requests.take(w, r, answerID(msg), body)
			return
		case wire.Refuse(w, r, msg): // what mcp-go would refuse as text/plain
			return
		case method == string(mcp.MethodInitialize):
			w.Header().Set(server.HeaderKeySessionID, e.mintSession(r, declared(msg)))
		case method == string(mcp.MethodSetLogLevel) && e.d.SetLevel != nil && !wire.IsNull(msg.ID) && knownVersion(r.Header):
			var level string
			_ = json.Unmarshal(msg.Params.Level, &level)
			e.d.SetLevel.AnswerSetLevel(w, r, msg.ID, mcp.LoggingLevel(level))
			return
		default:
			rs.sessionID = r.Header.Get(server.HeaderKeySessionID)
		}
	}
	sc := scopeOf(r.Context())
	if sc.tracker != nil {
		sc.tracker.state = rs
	}
	if e.d.Tasks != nil && isTaskRequest(method, msg) && e.serveTask(w, r, body, msg, rs) {
		return // tasks.go
	}
	if method == string(mcp.MethodToolsList) && e.serveList(w, r, msg, rs) {
		return // listguard.go
	}
	if method == string(mcp.MethodToolsCall) && !rs.legacy && e.bridge != nil {
		// A bridged 2026-07-28 call runs through the input-required bridge,
		// whatever the wire switch says: mcp-go could not finish a call
		// that asked its caller for input (off, the result comes through
		// mcp-go's client, typed).
		ctx := r.Context()
		if e.ensure != nil {
			if name, ok := msg.Params.ToolName(); ok {
				e.ensure.Ensure(ctx, name, r.Header)
			}
		}
		if e.paramHeadersRefused(w, r, msg) {
			return
		}
		if wire.ServeRoundTrip(w, r, msg, e.bridge, sc.sink()) {
			return
		}
	}
	if (method == string(mcp.MethodPromptsGet) || method == string(mcp.MethodResourcesRead)) && !rs.legacy && e.bridge != nil &&
		e.bridge.ServeCatalog(w, r, msg) {
		return // agents/bridge catalog.go
	}
	if ens, ok := e.d.Fast.(ToolEnsurer); ok && method == string(mcp.MethodToolsCall) {
		// A tool called before any listing showed it is registered first,
		// so that the fast path answers its first call too (a large result
		// of it is then passed through, not held by mcp-go).
		if name, ok := msg.Params.ToolName(); ok {
			ens.Ensure(r.Context(), name, r.Header)
		}
	}
	switch {
	case method == string(mcp.MethodNotificationCancelled) && rs.sessionID != "":
		e.cancelTracked(r, msg, body, rs.sessionID) // then mcp-go cancels its own, if any, and answers 202
	case method == string(mcp.MethodToolsCall) && e.d.Fast != nil &&
		wire.Serve(w, r, msg, e.d.Fast, rs.sessionID, e, sc.sink()):
		return
	}
	if method == string(mcp.MethodToolsCall) && e.d.Route != nil && !wire.IsNull(msg.ID) {
		if name, ok := msg.Params.ToolName(); ok {
			if err := e.d.Route(r.Context(), name, r.Header); err != nil {
				answerRouteError(w, msg.ID, rs.legacy, err) // routeerror.go
				return
			}
		}
	}
	if !rs.legacy && wire.Refuse(w, r, msg) {
		return
	}
	if rs.sessionID != "" {
		defer e.trackRequest(msg, rs.sessionID)()
	}
	e.serveMCP(w, r, body)
}

// serveMCP hands r, with body (nil for none) read already, to mcp-go
// through Handle, its entry point for a body that is buffered and a
// response writer of the caller's own (the request's wire.Response; a
// writer that is not one is wrapped). What mcp-go's ServeHTTP adds before
// Handle (DNS-rebinding protection, CORS, protected resource metadata) is
// off for an agent's server: the gateway guards by Origin.
func (e *Endpoint) serveMCP(w http.ResponseWriter, r *http.Request, body []byte) {
	hw, ok := w.(server.HTTPResponseWriter)
	if !ok {
		hw = wire.NewResponse(w, "", nil)
	}
	e.d.MCP.Handle(hw, &server.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header, Body: body, Context: r.Context()})
}

// trackRequest records a session-based request that mcp-go serves in the
// gateway's table while it runs, so that a notifications/cancelled that
// reaches the next snapshot after a reload can be handed to this one's
// mcp-go, which knows the request. It returns the function that removes
// the entry.
func (e *Endpoint) trackRequest(msg *wire.Message, session string) (untrack func()) {
	var id any
	if msg.MethodName() == "" || json.Unmarshal(msg.ID, &id) != nil || id == nil {
		return func() {} // not a request
	}
	c := e.track(session, id, &runningCall{owner: e})
	if c == nil {
		return func() {}
	}
	return c.Untrack
}

// track records a running call of session with id and returns it, to be
// untracked; nil when it cannot (the key is taken, or the table is full).
// The table is the gateway's (CallerRequests), so a cancel that reaches
// the next snapshot's endpoint after a reload still finds the call.
func (e *Endpoint) track(session string, id any, call *runningCall) *runningCall {
	return e.d.Requests.running.track(e.runningKey(session, id), call)
}

// runningKey is the table's key of a call: the agent, then mcp-go's key
// ("<session>:<id>", wire.AppendInflightKey), made in one piece.
func (e *Endpoint) runningKey(session string, id any) string {
	var b [128]byte
	return string(wire.AppendInflightKey(append(append(b[:0], e.d.Agent...), 0), session, id))
}

// Track records a fast call (wire.Tracker).
func (e *Endpoint) Track(session string, id any, cancel context.CancelFunc) wire.Untracker {
	if c := e.track(session, id, &runningCall{cancel: cancel, owner: e}); c != nil {
		return c
	}
	return nil // not a typed nil
}

// cancelTracked cancels the fast call a notifications/cancelled names, when
// mcp-go would take the message for one (a notification of a session-based
// request it accepts) and would key it so (server.go handleNotification).
func (e *Endpoint) cancelTracked(r *http.Request, msg *wire.Message, body []byte, session string) {
	h := r.Header
	var id any
	if !msg.IsNotification() || !knownVersion(h) || !wire.JSONContent(h.Get("Content-Type")) ||
		len(msg.Params.RequestID) == 0 || json.Unmarshal(msg.Params.RequestID, &id) != nil ||
		mcp.IsModernProtocol(msg.MetaString(mcp.MetaKeyProtocolVersion)) {
		return
	}
	call := e.d.Requests.running.remove(e.runningKey(session, id))
	switch {
	case call == nil:
	case call.cancel != nil: // a fast call
		call.cancel()
	case call.owner != e:
		// mcp-go of the snapshot the call runs on cancels it, as it would
		// have without the reload; this request's mcp-go answers.
		call.owner.serveMCP(discardWriter{h: http.Header{}}, r, body)
	}
}

// discardWriter takes an answer nobody reads.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
func (d discardWriter) Flush()                      {}
func (d discardWriter) CanStream() bool             { return false }

// knownVersion reports a protocol version header mcp-go accepts on a
// session-based request (absent, or a revision it knows); others are left
// to mcp-go to refuse.
func knownVersion(h http.Header) bool {
	v := h.Get(mcp.HeaderProtocolVersion)
	return v == "" || mcp.IsValidProtocolVersion(v)
}

// declared returns the letters of the client capabilities the caller
// declared in its initialize: e (elicitation), u (its URL mode, with e),
// s (sampling), r (roots).
func declared(msg *wire.Message) string {
	c := &msg.Params.Capabilities
	var caps []byte
	for _, c := range []struct {
		letter byte
		v      json.RawMessage
	}{{capElicitation, c.Elicitation}, {capSampling, c.Sampling}, {capRoots, c.Roots}} {
		if !wire.IsNull(c.v) {
			caps = append(caps, c.letter)
		}
		if c.letter == capElicitation && urlModeDeclared(c.v) {
			caps = append(caps, capElicitationURL)
		}
	}
	return string(caps)
}

// urlModeDeclared reports an elicitation capability that names URL mode
// ({"url": {}}); {} and {"form": {}} are form mode only.
func urlModeDeclared(elicitation json.RawMessage) bool {
	var modes struct {
		URL json.RawMessage `json:"url"`
	}
	return !wire.IsNull(elicitation) && json.Unmarshal(elicitation, &modes) == nil && !wire.IsNull(modes.URL)
}

// answersUs reports a JSON-RPC response to one of the endpoint's own
// requests.
func answersUs(msg *wire.Message) bool {
	return strings.HasPrefix(answerID(msg), requestIDPrefix) && (len(msg.Result) > 0 || len(msg.Error) > 0)
}

func answerID(msg *wire.Message) string {
	var id string
	_ = json.Unmarshal(msg.ID, &id) // a number is not ours
	return id
}

// The client capabilities a session id records (agents/sessions).
const (
	capElicitation    = sessions.CapElicitation
	capElicitationURL = sessions.CapElicitationURL
	capSampling       = sessions.CapSampling
	capRoots          = sessions.CapRoots
)

// sessionDeclared reports whether the session id was minted for a caller
// that declared capability c.
func sessionDeclared(id string, c byte) bool { return sessions.Declared(id, c) }

// writeRPCError answers a request with id by a JSON-RPC error, as mcp-go
// answers one it refuses (application/json; status 200, or for 2026-07-28
// what mcp-go's httpStatusForJSONRPCError gives the code); the tracking
// writer adds the request id to the message.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	wire.WriteError(w, status, id, code, msg, nil)
}
