package bridge

// prompts/get and resources/read of a Catalog (a proxy agent) for
// 2026-07-28 callers, and tools/list when it asks them to connect first
// (Lister), through the input-required bridge, as tools/call
// goes through it: a downstream that asks for elicitation, sampling or roots
// while it renders a prompt or reads a resource gets its answer from the
// caller's retry. The endpoint answers these requests itself (mcp-go could
// not finish a request that asked its caller for input) when it is sure of
// them; anything else (a request mcp-go would refuse: headers that do not
// match the body, an unknown version, no client capabilities; a name no
// server of the caller offers) goes to mcp-go, which answers it as before.
//
// The answer is what mcp-go's server makes of the handler's result for a
// 2026-07-28 caller: resultType, the agent's identity in _meta, and for
// resources/read the caching hints; a handler's error is an internal error,
// except a downstream's missing client capability (-32021), which the
// caller gets as it is. It is always JSON: progress and log messages of a
// bridged prompts/get or resources/read are not relayed.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// catalogParams are the params of a prompts/get or resources/read as the
// bridge reads them.
type catalogParams struct {
	Name      string            `json:"name"`
	URI       string            `json:"uri"`
	Arguments map[string]string `json:"arguments"`
}

// Catalog is a target whose prompts/get and resources/read run through the
// input-required bridge for 2026-07-28 callers (ServeCatalog).
type Catalog interface {
	// PromptCall is prompts/get of the prompt name with args for the
	// caller of ctx (inbound: its headers); nil when the caller has no such
	// prompt, which mcp-go then answers.
	PromptCall(ctx context.Context, name string, args map[string]string, inbound http.Header) CatalogCall
	// ResourceCall is resources/read of uri for the caller of ctx; nil as
	// PromptCall.
	ResourceCall(ctx context.Context, uri string, inbound http.Header) CatalogCall
	// Self is the agent's identity, stamped on the results.
	Self() mcp.Implementation
	// ReadCacheHints are the caching hints of a resources/read result.
	ReadCacheHints() (ttlMs int64, scope mcp.CacheScope)
}

// Lister is a Catalog whose tools/list may need to ask its caller first (a
// proxy whose server acts with each caller's own account, not connected
// yet): ListCall is the list run through the bridge; nil when there is
// nothing to ask and the request continues no round (roundTrip false),
// mcp-go then answers.
type Lister interface {
	ListCall(ctx context.Context, inbound http.Header, roundTrip bool) CatalogCall
}

// CatalogCall is one downstream request the bridge runs, its requests to
// the caller going to rounds: the downstream's result
// (*mcp.GetPromptResult, *mcp.ReadResourceResult) or the error a handler of
// mcp-go's would have returned.
type CatalogCall func(ctx context.Context, rounds wire.Rounds) (result any, err error)

// InputRequiredPassThrough is a target whose answer may be a downstream's
// own input_required result, which the bridge passes through to the caller
// (its requests as the downstream keyed them, its requestState sealed
// inside the bridge's) rather than taking it for the call's end.
type InputRequiredPassThrough interface {
	wire.Target
	PassesInputRequired()
}

// ServeCatalog answers msg, a 2026-07-28 prompts/get, resources/read or
// tools/list (Lister) of a proxy agent, through the bridge, and reports whether it did; when it
// reports false it has written nothing. The request runs as a bridged call
// named "<method> <prompt name or uri>" (a tool name has no space, so the
// requestState of one is never taken for the other) whose arguments are
// the prompt's, with a Target of its own (catalogTarget).
func (b *Bridge) ServeCatalog(w http.ResponseWriter, r *http.Request, msg *wire.Message) bool {
	p := b.catalog
	if p == nil {
		return false
	}
	method := mcp.MCPMethod(msg.MethodName())
	info, id, ok := modernRequest(r, msg, method)
	if !ok {
		return false
	}
	var params catalogParams
	if json.Unmarshal(msg.RawParams, &params) != nil {
		return false
	}
	ctx := server.WithRequestProtocolInfo(r.Context(), info)
	var req mcp.CallToolRequest
	var call CatalogCall
	switch method {
	case mcp.MethodPromptsGet:
		call = p.PromptCall(ctx, params.Name, params.Arguments, r.Header)
		req.Params.Name = string(method) + " " + params.Name
		if params.Arguments != nil {
			req.Params.RawArguments = mustJSON(params.Arguments)
		}
	case mcp.MethodResourcesRead:
		call = p.ResourceCall(ctx, params.URI, r.Header)
		req.Params.Name = string(method) + " " + params.URI
	case mcp.MethodToolsList:
		if l, ok := p.(Lister); ok {
			call = l.ListCall(ctx, r.Header, len(msg.Params.InputResponses) > 0 || len(msg.Params.RequestState) > 0)
		}
		req.Params.Name = string(method) + " "
	}
	if call == nil {
		return false
	}
	req.Method, req.Header = string(mcp.MethodToolsCall), r.Header
	c := &wire.Call{Req: req, ID: id, Modern: true}
	if len(msg.Params.InputResponses) > 0 || len(msg.Params.RequestState) > 0 {
		c.RoundTrip = &wire.RoundTrip{InputResponses: msg.Params.InputResponses, RequestState: msg.Params.RequestState}
	}
	cb := &Bridge{s: b.s, agent: b.agent, inner: catalogTarget{call: call, catalog: p}}
	writeAnswer(w, cb.Answer(ctx, c))
	return true
}

// catalogTarget is the Target of one bridged prompts/get or resources/read:
// its Answer runs the catalog's call and makes of its result what mcp-go's
// server would.
type catalogTarget struct {
	call    CatalogCall
	catalog Catalog
}

func (catalogTarget) Answers(string) bool { return true }
func (catalogTarget) RawArgs() bool       { return true }

func (t catalogTarget) Answer(ctx context.Context, c *wire.Call) any {
	id := c.ID
	res, err := t.call(ctx, c.Rounds)
	if err != nil {
		var rpc *mcpclient.RPCError
		if errors.As(err, &rpc) && rpc.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			var data any
			if len(rpc.Data) > 0 {
				data = rpc.Data
			}
			return errAnswer(id, rpc.Code, rpc.Message, data)
		}
		return errAnswer(id, mcp.INTERNAL_ERROR, err.Error(), nil) // mcp-go's handlerError
	}
	decorate(res, t.catalog)
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
}

// modernRequest reports a 2026-07-28 request of method that mcp-go would
// accept as it is (handlePost's checks: Content-Type, the protocol version
// in the header and in _meta, no Last-Event-ID, the client capabilities in
// _meta, Mcp-Method and Mcp-Name), with its protocol info and JSON-RPC id
// (numbers as float64, as mcp-go decodes them).
func modernRequest(r *http.Request, msg *wire.Message, method mcp.MCPMethod) (*server.RequestProtocolInfo, any, bool) {
	h := r.Header
	version := msg.MetaString(mcp.MetaKeyProtocolVersion)
	if !wire.JSONContent(h.Get("Content-Type")) || !msg.IsRequest() || !wire.IsNull(msg.Params.Task) ||
		h.Get(mcp.HeaderProtocolVersion) != version || !mcp.IsModernProtocol(version) || !mcp.IsValidProtocolVersion(version) ||
		h.Get(mcp.HeaderLastEventID) != "" || mcp.ValidateStandardHeaders(h.Get, version, method, msg.RawParams) != nil {
		return nil, nil, false
	}
	meta, _ := msg.Meta()
	var caps mcp.ClientCapabilities
	if raw := meta[mcp.MetaKeyClientCapabilities]; wire.IsNull(raw) || json.Unmarshal(raw, &caps) != nil {
		return nil, nil, false
	}
	var id any
	if json.Unmarshal(msg.ID, &id) != nil {
		return nil, nil, false
	}
	return &server.RequestProtocolInfo{Modern: true, ProtocolVersion: version, ClientCapabilities: &caps,
		LogLevel: mcp.LoggingLevel(msg.MetaString(mcp.MetaKeyLogLevel))}, id, true
}

// decorate stamps res as mcp-go's decorateResponse does for a 2026-07-28
// caller (wire.Decorate, with the catalog's Self), and adds the caching
// hints of a read.
func decorate(res any, catalog Catalog) {
	if m, ok := res.(mcp.ResultMetadata); ok {
		wire.Decorate(m, catalog.Self())
	}
	if c, ok := res.(mcp.CacheHintSetter); ok {
		ttl, scope := catalog.ReadCacheHints()
		c.SetCacheHints(ttl, scope)
	}
}

// writeAnswer writes a JSON-RPC answer as JSON, with the HTTP status
// 2026-07-28 gives its error code.
func writeAnswer(w http.ResponseWriter, ans any) {
	raw, err := answerJSON(ans)
	status := http.StatusOK
	if err != nil {
		ans = errAnswer(nil, mcp.INTERNAL_ERROR, "encoding the answer: "+err.Error(), nil)
		raw, _ = answerJSON(ans)
	}
	if e, ok := ans.(mcp.JSONRPCError); ok {
		status = wire.HTTPStatus(e.Error.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
