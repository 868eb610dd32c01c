package agents

// The fast path of a tools/call, the gateway's hot path: a proxy's call of
// a downstream tool (proxy_fast.go) and an agent's send_message
// (fast_send.go). Through mcp-go (v1.2.1), a call costs the gateway more in
// mcp-go's server than a proxied call costs in the proxy: it parses the
// body about six times, decodes the 2026-07-28 _meta three times, checks the
// Mcp-* headers against the tool's schema, and makes a per-request session
// with a 100-slot notification channel and a forwarder goroutine. The
// endpoint (endpoint.go) hands a tools/call to its agent's fastTarget first;
// fastCall parses the body once, and when mcp-go would certainly accept the
// request it runs the same handler and writes what mcp-go would write
// (fast_stream.go). Anything it is not sure of goes to mcp-go, untouched: a
// request it does not take has nothing written and nothing consumed.
//
// What it does not take, and why:
//   - requests mcp-go would refuse or treat specially: a Content-Type other
//     than application/json, an unknown or inconsistent protocol version, a
//     2026-07-28 request without its capabilities, Mcp-Method or Mcp-Name
//     headers, or with Last-Event-ID; members of a response (result, error);
//     params mcp-go reads and the fast path does not (task, inputResponses,
//     requestState);
//   - a name the target does not answer (fastName: for a proxy, one not yet
//     in mcp-go's registry, which the Before hook registers or mcp-go
//     answers "tool not found"; get_health everywhere);
//   - a call whose notifications/cancelled key cannot be tracked (endpoint
//     track: another running call with the same key, or the table full).
//
// mcp-go also checks Mcp-Param-* headers against x-mcp-header annotations of
// the called tool's input schema. The fast path does not: the schemas of
// the tools it answers (sendMessageSchema; a proxy's placeholderSchema) bind
// none, and a change there must revisit this.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/internal/jsonmember"
)

// fastTarget is an agent kind's side of the fast path.
type fastTarget interface {
	// fastName reports a tool name mcp-go would dispatch now to the
	// handler that answer runs.
	fastName(name string) bool
	// rawArgs reports that answer sends an object of arguments on as the
	// caller sent it (fast_raw.go), so they need not be decoded.
	rawArgs() bool
	// streamsAnswer reports that a session-based caller that accepts SSE
	// gets the answer as SSE even without notifications before it.
	streamsAnswer() bool
	// answer runs the handler as mcp-go's handleToolCall and HandleMessage
	// would and returns the JSON-RPC message mcp-go would write.
	answer(ctx context.Context, req mcp.CallToolRequest, id any, modern bool) any
}

// fastCall answers a tools/call without mcp-go's server when the request is
// plain (see above), and reports whether it did. When it reports false it
// has written nothing. msg is body as the gateway parsed it, or nil.
func (e *endpoint) fastCall(w http.ResponseWriter, r *http.Request, body []byte, msg *Message, rs *requestState) bool {
	t := e.fast
	if t == nil || e.fastOff {
		return false
	}
	if msg == nil {
		var err error
		if msg, err = ParseMessage(body); err != nil {
			return false
		}
	}
	if !msg.isMethod(string(mcp.MethodToolsCall)) || !plainEnvelope(msg) || !jsonContent(r.Header.Get("Content-Type")) {
		return false
	}
	name, ok := msg.Params.name()
	if !ok {
		return false
	}
	meta, ok := decodeFastMeta(msg.Params.Meta)
	if !ok {
		return false
	}
	info, ok := protocolOf(r.Header, meta)
	if !ok || !t.fastName(name) {
		return false
	}
	req, id, ok := toCallRequest(msg, name, meta, r.Header, t.rawArgs())
	if !ok {
		return false
	}
	ctx := context.WithValue(r.Context(), requestStateKey{}, rs)
	if rs.sessionID != "" && !info.Modern {
		// mcp-go keys a call's notifications/cancelled "<session>:<id>"
		// (server.go inflightKey); the endpoint routes those to this call.
		// Other calls end with the request's context, which net/http
		// cancels when the caller goes away or the handler returns.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		untrack := e.track(fmt.Sprintf("%s:%v", rs.sessionID, id), &runningCall{cancel: cancel, owner: e})
		if untrack == nil {
			return false
		}
		defer untrack()
	}
	out := newFastStream(w, r, !info.Modern && rs.acceptSSE && t.streamsAnswer())
	ctx = context.WithValue(server.WithRequestProtocolInfo(ctx, info), fastStreamKey{}, out)
	out.finish(t.answer(ctx, req, id, info.Modern))
	return true
}

// plainEnvelope reports a JSON-RPC request mcp-go dispatches as one: version
// 2.0, an id (a string or a number), no member of a response, params an
// object (or absent) without the members mcp-go acts on that the fast path
// does not read.
func plainEnvelope(m *Message) bool {
	return string(m.JSONRPC) == `"2.0"` && !isNull(m.ID) && (m.ID[0] == '"' || m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9')) &&
		len(m.Result) == 0 && len(m.Error) == 0 && m.paramsRead &&
		isNull(m.Params.Task) && len(m.Params.InputResponses) == 0 && len(m.Params.RequestState) == 0
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// jsonContent is mcp-go's Content-Type check of a POST.
func jsonContent(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// fastMeta is a request's _meta as far as the fast path reads it: the
// members mcp-go's Meta accessors decode, each decoded as they decode it
// (exact key match; a value of the wrong type reads as absent). mcp-go's own
// Meta.UnmarshalJSON decodes every member into a map of any and its
// accessors re-encode and decode again; this costs a fraction of that.
type fastMeta struct {
	present       bool // a _meta object was sent (not absent, not null)
	progressToken any
	version       string
	caps          *mcp.ClientCapabilities
	logLevel      mcp.LoggingLevel
}

// decodeFastMeta decodes raw, and reports false when mcp-go would not
// accept it (a _meta that is not an object or null). The members are found
// by jsonmember.Each, which costs a fraction of decoding them into a map.
func decodeFastMeta(raw json.RawMessage) (fastMeta, bool) {
	var fm fastMeta
	if isNull(raw) {
		return fm, true
	}
	var token, version, caps, level []byte
	if !jsonmember.Each(raw, func(name string, value []byte) {
		switch name {
		case "progressToken":
			token = value
		case mcp.MetaKeyProtocolVersion:
			version = value
		case mcp.MetaKeyClientCapabilities:
			caps = value
		case mcp.MetaKeyLogLevel:
			level = value
		}
	}) {
		return fm, false
	}
	fm.present = true
	if token != nil && json.Unmarshal(token, &fm.progressToken) != nil {
		return fm, false
	}
	fm.version = metaString(version)
	fm.logLevel = mcp.LoggingLevel(metaString(level))
	if !isNull(caps) {
		var c mcp.ClientCapabilities
		if json.Unmarshal(caps, &c) == nil {
			fm.caps = &c
		}
	}
	return fm, true
}

// metaString is a _meta member that must be a string, "" when it is not
// one (as mcp-go's accessors read it).
func metaString(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	return jsonmember.Unquote(raw)
}

// meta is the *mcp.Meta the handler gets: the progress token is all that
// callTool reads of it (progressToken), so the other members are not kept.
func (fm fastMeta) meta() *mcp.Meta {
	if !fm.present {
		return nil
	}
	return &mcp.Meta{ProgressToken: fm.progressToken}
}

// protocolOf reports the request's protocol era as mcp-go's
// detectRequestEra and extractRequestProtocolInfo read it, and whether
// mcp-go would accept a tools/call of that era with these headers
// (rejectUnsupportedProtocolVersion; validateModernRequest and
// ValidateStandardHeaders for 2026-07-28).
func protocolOf(h http.Header, meta fastMeta) (*server.RequestProtocolInfo, bool) {
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
// downstream call (fast_raw.go) sends an object as the caller sent it.
func toCallRequest(m *Message, name string, meta fastMeta, h http.Header, rawArgs bool) (mcp.CallToolRequest, any, bool) {
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
func decodeID(raw json.RawMessage) (any, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		return jsonmember.Unquote(raw), true // raw is valid JSON (see Message)
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

// toolAnswer is the JSON-RPC message mcp-go's handleToolCall and
// HandleMessage make of a tool handler's result and error: mcp-go's
// noResultError for neither, its multi round-trip check, and the 2026-07-28
// decoration.
func (a *Agent) toolAnswer(id any, tool string, res *mcp.CallToolResult, err error, modern bool) any {
	if err == nil && res == nil {
		err = fmt.Errorf("tool '%s' handler returned no result", tool) // mcp-go's noResultError
	}
	if err == nil && res.NeedsInput() && !modern {
		err = errInputRequired(res)
	}
	if err != nil {
		return rpcErrorFor(id, err, modern)
	}
	if modern {
		a.decorate(res)
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
}

// decorate stamps a result for a 2026-07-28 caller as mcp-go's
// decorateResponse does: resultType "complete" unless set, and the server's
// identity in _meta unless the result names one.
func (a *Agent) decorate(res *mcp.CallToolResult) {
	if res.GetResultType() == "" {
		res.SetResultType(mcp.ResultTypeComplete)
	}
	if meta := res.EnsureResultMeta(); meta.ServerInfo() == nil {
		meta.SetServerInfo(mcp.Implementation{Name: a.Name, Version: a.set.deps.Config.Version,
			Title: a.Config.Title, Description: a.Config.Description})
	}
}
