package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// JSON-RPC error codes the gateway answers with itself.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcInvalidParams  = -32602
)

// rpcError is a JSON-RPC error the gateway answers before mcp-go sees the
// message: id is the message's id when it could be read (else nil).
type rpcError struct {
	id   any
	code int
	msg  string
	data any // the error's data member, or nil
}

// checkMessage rejects a POST body that is not one JSON-RPC 2.0 message with
// an error that says what is wrong: not JSON, not an object (mcp-go would
// answer "not valid json" for well-formed JSON that is not an object), or
// an envelope wire's Check refuses.
func checkMessage(body []byte) (*wire.Message, *rpcError) {
	env, err := wire.Parse(body)
	if err != nil {
		if syntax := (*json.SyntaxError)(nil); errors.As(err, &syntax) {
			return nil, &rpcError{code: rpcParseError, msg: "parse error: the request body is not valid json: " + err.Error()}
		}
		return nil, &rpcError{code: rpcInvalidRequest, msg: "invalid request: a JSON-RPC message must be a JSON object (batches are not supported)"}
	}
	if bad := env.Check(); bad != nil {
		err := &rpcError{code: bad.Code, msg: bad.Message}
		if env.HasID() {
			_ = json.Unmarshal(env.ID, &err.id) // decoded only for an error
		}
		return nil, err
	}
	return env, nil
}

// checkHeaders rejects, as JSON-RPC errors carrying the message's id, the
// headers mcp-go (v1.2.1) would refuse with a text/plain 400 and no id: a
// Content-Type other than application/json, and an MCP-Protocol-Version
// header naming a revision it does not know (-32022 with the supported
// list, as mcp-go answers an unknown 2026-07-28-style _meta version). An
// initialize is let through whatever its header says: it negotiates the
// version in its body, and mcp-go does not check the header there.
func checkHeaders(h http.Header, msg *wire.Message) *rpcError {
	id := func() any {
		var id any
		if !wire.IsNull(msg.ID) {
			_ = json.Unmarshal(msg.ID, &id)
		}
		return id
	}
	ct := h.Get("Content-Type")
	if !wire.JSONContent(ct) {
		return &rpcError{id: id(), code: rpcInvalidRequest,
			msg: "invalid request: Content-Type must be application/json, not " + quoteClipped(ct)}
	}
	v := h.Get(mcp.HeaderProtocolVersion)
	if v == "" || mcp.IsValidProtocolVersion(v) || msg.MethodName() == string(mcp.MethodInitialize) {
		return nil
	}
	return &rpcError{id: id(), code: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		msg:  "unsupported protocol version " + quoteClipped(v) + " in the " + mcp.HeaderProtocolVersion + " header",
		data: mcp.UnsupportedProtocolVersionData{Supported: mcp.ValidProtocolVersions, Requested: v}}
}

// servesRunningCall reports whether a POST body is a JSON-RPC response (a
// caller's answer to a server-to-client request) or a
// notifications/cancelled: messages for a call that is already running.
func servesRunningCall(msg *wire.Message) bool {
	return msg != nil && (wire.IsNull(msg.Method) || msg.MethodName() == "notifications/cancelled")
}
