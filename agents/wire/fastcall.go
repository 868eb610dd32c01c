package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Target is an agent kind's side of the fast path.
type Target interface {
	// Answers reports a tool name mcp-go would dispatch now to the
	// handler that Answer runs.
	Answers(name string) bool
	// RawArgs reports that Answer sends an object of arguments on as the
	// caller sent it (RawResponse), so they need not be decoded.
	RawArgs() bool
	// Answer runs the handler of c as mcp-go's handleToolCall and
	// HandleMessage would and returns the JSON-RPC message to write: a
	// RawAnswer, or a value mcp-go would encode (ToolAnswer).
	Answer(ctx context.Context, c *Call) any
}

// Tracker records a running session-based call (session, id: mcp-go
// keys its notifications/cancelled so, AppendInflightKey), so that the endpoint
// can route a cancel to it; Track returns what removes the entry, or nil
// when the call cannot be tracked.
type Tracker interface {
	Track(session string, id any, cancel context.CancelFunc) Untracker
}

// Untracker removes a call Tracker.Track recorded.
type Untracker interface{ Untrack() }

// Serve answers msg, a tools/call, through t when the request is plain
// (package comment), and reports whether it did. When it reports false it
// has written nothing. session is the caller's session id (session-based
// callers), track records the call for its notifications/cancelled, and
// sink is the caller's tracked response (Call.Sink; nil: none).
func Serve(w http.ResponseWriter, r *http.Request, msg *Message, t Target, session string, track Tracker, sink Sink) bool {
	if !Fast() {
		return false
	}
	return serve(w, r, msg, t, session, track, sink)
}

// ServeRoundTrip is Serve for a Target that takes multi round-trip
// members (RoundTripTarget): it also answers a 2026-07-28 call that carries
// inputResponses or requestState (Call.RoundTrip), and it answers whatever
// the switch says, since mcp-go cannot finish a call the Target started.
func ServeRoundTrip(w http.ResponseWriter, r *http.Request, msg *Message, t RoundTripTarget, sink Sink) bool {
	return serve(w, r, msg, t, "", nil, sink)
}

// RoundTripTarget is a Target that answers 2026-07-28 calls with
// inputResponses and requestState itself (agents/endpoint's input-required
// bridge).
type RoundTripTarget interface {
	Target
	TakesRoundTrips()
}

// RoundTrip is a 2026-07-28 tools/call's multi round-trip members as the
// caller sent them (nil when absent).
type RoundTrip struct{ InputResponses, RequestState json.RawMessage }

func serve(w http.ResponseWriter, r *http.Request, msg *Message, t Target, session string, track Tracker, sink Sink) bool {
	_, roundTrips := t.(RoundTripTarget)
	rt := roundTrips && (len(msg.Params.InputResponses) > 0 || len(msg.Params.RequestState) > 0)
	if msg.MethodName() != string(mcp.MethodToolsCall) || !JSONContent(r.Header.Get("Content-Type")) {
		return false
	}
	if rt {
		saved := [2]json.RawMessage{msg.Params.InputResponses, msg.Params.RequestState}
		msg.Params.InputResponses, msg.Params.RequestState = nil, nil
		plain := plainEnvelope(msg)
		msg.Params.InputResponses, msg.Params.RequestState = saved[0], saved[1]
		if !plain {
			return false
		}
	} else if !plainEnvelope(msg) {
		return false
	}
	name, ok := msg.Params.ToolName()
	if !ok {
		return false
	}
	meta, ok := decodeMeta(msg)
	if !ok {
		return false
	}
	info, ok := protocolOf(r.Header, meta)
	if !ok || !t.Answers(name) {
		return false
	}
	req, id, ok := toCallRequest(msg, name, meta, r.Header, t.RawArgs())
	if !ok {
		return false
	}
	if rt && !info.Modern {
		return false // mcp-go answers a caller before 2026-07-28 as it does
	}
	ctx := r.Context()
	var trip *RoundTrip
	if rt {
		trip = &RoundTrip{InputResponses: msg.Params.InputResponses, RequestState: msg.Params.RequestState}
	}
	if session != "" && !info.Modern {
		// mcp-go keys a call's notifications/cancelled "<session>:<id>"
		// (server.go inflightKey); the endpoint routes those to this call.
		// Other calls end with the request's context, which net/http
		// cancels when the caller goes away or the handler returns.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		untrack := track.Track(session, id, cancel)
		if untrack == nil {
			return false
		}
		defer untrack.Untrack()
	}
	out := newStream(w, r)
	out.modern, out.id = info.Modern, id
	ctx = server.WithRequestProtocolInfo(ctx, info)
	out.finish(t.Answer(ctx, &Call{Req: req, ID: id, Modern: info.Modern, RoundTrip: trip, Sink: sink, stream: out}))
	return true
}

// plainEnvelope reports a JSON-RPC request mcp-go dispatches as one: version
// 2.0, an id (a string or a number), no member of a response, params an
// object (or absent) without the members mcp-go acts on that the fast path
// does not read.
func plainEnvelope(m *Message) bool {
	return m.IsRequest() && IsNull(m.Params.Task) && len(m.Params.InputResponses) == 0 && len(m.Params.RequestState) == 0
}

// JSONContent is mcp-go's Content-Type check of a POST.
func JSONContent(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// callMeta is a request's _meta as far as the fast path reads it: the
// members mcp-go's Meta accessors decode, each decoded as they decode it
// (exact key match; a value of the wrong type reads as absent). mcp-go's own
// Meta.UnmarshalJSON decodes every member into a map of any and its
// accessors re-encode and decode again; this costs a fraction of that.
type callMeta struct {
	present       bool // a _meta object was sent (not absent, not null)
	progressToken any
	version       string
	caps          *mcp.ClientCapabilities
	logLevel      mcp.LoggingLevel
	own           map[string]any // members of pallasgw's own extensions (isOwnMeta), for the handler
}

// decodeMeta reads the request's _meta, and reports false when mcp-go
// would not accept it (a _meta that is not an object or null).
func decodeMeta(msg *Message) (callMeta, bool) {
	var fm callMeta
	members, ok := msg.Meta()
	if !ok || members == nil {
		return fm, ok
	}
	fm.present = true
	if token := members["progressToken"]; token != nil {
		var pt any // not fm's own member: fm would then live on the heap
		if json.Unmarshal(token, &pt) != nil {
			return fm, false
		}
		fm.progressToken = pt
	}
	fm.version = msg.MetaString(mcp.MetaKeyProtocolVersion)
	fm.logLevel = mcp.LoggingLevel(msg.MetaString(mcp.MetaKeyLogLevel))
	if caps := members[mcp.MetaKeyClientCapabilities]; !IsNull(caps) {
		var c mcp.ClientCapabilities
		if string(caps) == "{}" || json.Unmarshal(caps, &c) == nil { // none declared: nothing to decode
			fm.caps = &c
		}
	}
	for k, v := range members {
		var val any
		if isOwnMeta(k) && json.Unmarshal(v, &val) == nil {
			if fm.own == nil {
				fm.own = map[string]any{}
			}
			fm.own[k] = val
		}
	}
	return fm, true
}

// meta is the *mcp.Meta the handler gets: the progress token and the
// members of pallasgw's own extensions are all that the handlers read of
// it, so the other members are not kept.
func (fm callMeta) meta() *mcp.Meta {
	if !fm.present {
		return nil
	}
	return &mcp.Meta{ProgressToken: fm.progressToken, AdditionalFields: fm.own}
}

// protocolOf reports the request's protocol era as mcp-go's
// detectRequestEra and extractRequestProtocolInfo read it, and whether
// mcp-go would accept a tools/call of that era with these headers
// (rejectUnsupportedProtocolVersion; validateModernRequest and
// ValidateStandardHeaders for 2026-07-28).
func protocolOf(h http.Header, meta callMeta) (*server.RequestProtocolInfo, bool) {
	header, version := h.Get(mcp.HeaderProtocolVersion), meta.version
	if !mcp.IsModernProtocol(header) && !mcp.IsModernProtocol(version) {
		return &server.RequestProtocolInfo{ProtocolVersion: version}, header == "" || mcp.IsValidProtocolVersion(header)
	}
	if header != version || !mcp.IsValidProtocolVersion(version) || h.Get(mcp.HeaderLastEventID) != "" ||
		h.Get(mcp.HeaderMethod) != string(mcp.MethodToolsCall) {
		return nil, false
	}
	if meta.caps == nil {
		return nil, false
	}
	return &server.RequestProtocolInfo{Modern: true, ProtocolVersion: version, ClientCapabilities: meta.caps,
		LogLevel: meta.logLevel}, true
}

// toCallRequest builds the request mcp-go would hand the handler, and the
// JSON-RPC id as mcp-go decodes it (numbers as float64). For 2026-07-28 the
// Mcp-Name header must name the tool (ValidateStandardHeaders).
//
// The arguments are decoded only when the handler will read them: a raw
// downstream call (RawResponse) sends an object as the caller sent it.
func toCallRequest(m *Message, name string, meta callMeta, h http.Header, rawArgs bool) (mcp.CallToolRequest, any, bool) {
	var req mcp.CallToolRequest
	id, ok := decodeID(m.ID)
	if !ok {
		return req, nil, false
	}
	if mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) {
		if hname, ok := mcp.DecodeHeaderValue(h.Get(mcp.HeaderName)); !ok || hname == "" || hname != name {
			return req, nil, false
		}
	}
	req.Method = string(mcp.MethodToolsCall)
	req.Header = h
	req.Params.Name, req.Params.Meta = name, meta.meta()
	if len(m.Params.Arguments) > 0 {
		req.Params.RawArguments = m.Params.Arguments
		if rawArgs && m.Params.Arguments[0] == '{' {
			return req, id, true
		}
		if json.Unmarshal(m.Params.Arguments, &req.Params.Arguments) != nil {
			return req, nil, false
		}
	}
	return req, id, true
}

// decodeID is a JSON-RPC id as encoding/json decodes it into an any: a
// string, or a number as float64.
// AppendInflightKey appends the key of a session-based call in flight to
// b: "<session>:<id>" as mcp-go's server keys it (inflightKey, fmt's %v),
// for the notifications/cancelled that name it.
func AppendInflightKey(b []byte, session string, id any) []byte {
	b = append(append(b, session...), ':')
	switch id := id.(type) {
	case float64:
		return strconv.AppendFloat(b, id, 'g', -1, 64)
	case string:
		return append(b, id...)
	}
	return fmt.Appendf(b, "%v", id)
}

func decodeID(raw json.RawMessage) (any, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// errInputRequired is what the fast path answers a caller before 2026-07-28
// when the downstream's result asks for input (multi round-trip). mcp-go
// would ask the caller with server-to-client requests and call again; a
// downstream session of pallasgw speaks 2025-11-25, so a conforming
// downstream never returns such a result. An empty request list is mcp-go's
// own error, word for word.
func errInputRequired(res *mcp.CallToolResult) error {
	if len(res.InputRequests) == 0 {
		return fmt.Errorf("multi round-trip: %w", server.ErrLoadShedding)
	}
	return errors.New("multi round-trip: the downstream asked for input, which pallasgw does not relay to " +
		"callers before protocol 2026-07-28 on this path")
}

// rpcErrorFor is mcp-go's handlerError: a tool handler's error is an
// internal error, except a URL elicitation requirement for a caller before
// 2026-07-28, which keeps its own code and data.
func rpcErrorFor(id any, err error, modern bool) mcp.JSONRPCError {
	code, data := mcp.INTERNAL_ERROR, any(nil)
	if required, ok := urlElicitationRequired(err); ok && !modern {
		details := required.JSONRPCError().Error
		code, data = details.Code, details.Data
	}
	// Errors the caller gets as they are: the gateway's own (CallerError),
	// and a downstream's missing client capability for a 2026-07-28 caller
	// (mcp-go's handlerError would make both internal errors).
	var ce *CallerError
	var rpc *RPCError
	switch {
	case errors.As(err, &ce):
		code, data = ce.Code, ce.Data
		if ce.Data == nil {
			data = nil
		}
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
			Error: mcp.NewJSONRPCErrorDetails(code, ce.Message, data)}
	case modern && errors.As(err, &rpc) && rpc.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		if len(rpc.Data) > 0 {
			data = rpc.Data
		}
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
			Error: mcp.NewJSONRPCErrorDetails(rpc.Code, rpc.Message, data)}
	}
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Error: mcp.NewJSONRPCErrorDetails(code, err.Error(), data)}
}

func urlElicitationRequired(err error) (mcp.URLElicitationRequiredError, bool) {
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		return required, true
	}
	var pointer *mcp.URLElicitationRequiredError
	if errors.As(err, &pointer) && pointer != nil {
		return *pointer, true
	}
	return required, false
}

// CallerError is an error a Target answers its caller with as the JSON-RPC
// error it names (code, message, data), not as a handler's internal error.
type CallerError struct {
	Code    int
	Message string
	Data    any // nil: none
	// Status, when set, is the HTTP status of a JSON answer (a request
	// refused before it ran: 503 while the session store is unavailable),
	// with RetryAfter as its Retry-After header when set.
	Status     int
	RetryAfter time.Duration
}

// Refusal is the answer of a CallerError with a Status of its own.
type Refusal struct {
	mcp.JSONRPCError
	Status     int
	RetryAfter time.Duration
}

func (e *CallerError) Error() string { return e.Message }

// HTTPStatus is the HTTP status MCP 2026-07-28 gives a JSON-RPC error
// answer of code (mcp-go's httpStatusForJSONRPCError).
func HTTPStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// Recover, deferred by a Target's Answer around the tool handler it runs,
// turns a panic there into the error mcp-go's WithRecovery middleware
// makes of it (the agents' servers are built with it), so that the fast
// path answers a panicking handler as mcp-go would. The handler's other
// results stay as they were when it panicked (unset).
func Recover(tool string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("panic recovered in %s tool handler: %v", tool, r)
	}
}

// ToolAnswer is the JSON-RPC message mcp-go's handleToolCall and
// HandleMessage make of a tool handler's result and error: mcp-go's
// noResultError for neither, its multi round-trip check, and the 2026-07-28
// decoration.
func ToolAnswer(id any, tool string, res *mcp.CallToolResult, err error, modern bool, self mcp.Implementation) any {
	if err == nil && res == nil {
		err = fmt.Errorf("tool '%s' handler returned no result", tool) // mcp-go's noResultError
	}
	if err == nil && res.NeedsInput() && !modern {
		err = errInputRequired(res)
	}
	if err != nil {
		if ce := (*CallerError)(nil); errors.As(err, &ce) && ce.Status != 0 {
			return Refusal{JSONRPCError: rpcErrorFor(id, err, modern), Status: ce.Status, RetryAfter: ce.RetryAfter}
		}
		return rpcErrorFor(id, err, modern)
	}
	if modern {
		Decorate(res, self)
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
}
