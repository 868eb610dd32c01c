package wire

import (
	"bytes"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// The refusals mcp-go would write as text/plain (Refuse). Gap: mcp-go
// v1.2.1 answers about 25 refusals of its Streamable HTTP server with
// writeHTTPError, a text/plain body an MCP client cannot read as JSON-RPC,
// and offers no hook to answer them otherwise. The gateway answers each
// one it can reach before mcp-go sees the request, as a JSON-RPC error
// with mcp-go's status and wording: the gateway's body checks
// (gateway/jsonrpc.go: Content-Type, an unknown MCP-Protocol-Version) and
// its router (GET, other methods) first, then Refuse for what reaches an
// endpoint. The others cannot be reached in stateless mode (a session id
// that fails validation or termination, a GET stream); docs/architecture.md
// lists every case. Buys: correctness (every error body is JSON-RPC), not
// speed. Retired by: mcp-go answering its refusals as JSON-RPC errors.

// Refuse answers r, a request for an agent's endpoint, when mcp-go's
// StreamableHTTPServer would refuse it with a text/plain body, and reports
// whether it did. msg is r's decoded body (nil when r is not a POST or its
// body did not parse). A JSON-RPC response in msg is refused unless the
// endpoint took it first (an answer to one of its own requests): in
// stateless mode mcp-go holds no request a caller could answer.
func Refuse(w http.ResponseWriter, r *http.Request, msg *Message) bool {
	version := r.Header.Get(mcp.HeaderProtocolVersion)
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		if mcp.IsModernProtocol(version) { // rejectModernSessionMethod
			w.Header().Set("Allow", http.MethodPost)
			WriteError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST,
				"DELETE is not supported in protocol version "+mcp.ProtocolVersion20260728+
					": server-to-client messages use subscriptions/listen", nil)
			return true
		}
		return refuseVersion(w, version, nil) // handleDelete
	default: // Handle: no GET stream in stateless mode, no other method
		w.Header().Set("Allow", "POST, DELETE")
		WriteError(w, http.StatusMethodNotAllowed, nil, mcp.INVALID_REQUEST,
			r.Method+" is not served: this stateless endpoint takes POST requests (and DELETE of a session)", nil)
		return true
	}
	idOf := func() any { // the refused request's id, made only for a refusal
		if msg != nil && !IsNull(msg.ID) {
			return msg.ID
		}
		return nil
	}
	if !JSONContent(r.Header.Get("Content-Type")) {
		WriteError(w, http.StatusBadRequest, idOf(), mcp.INVALID_REQUEST, "Invalid content type: must be 'application/json'", nil)
		return true
	}
	if msg == nil || mcp.IsModernProtocol(version) || mcp.IsModernProtocol(msg.MetaString(mcp.MetaKeyProtocolVersion)) {
		return false // mcp-go answers a broken body, and a 2026-07-28 message, as JSON-RPC
	}
	if msg.MethodName() != string(mcp.MethodInitialize) && version != "" && !mcp.IsValidProtocolVersion(version) && refuseVersion(w, version, idOf()) {
		return true
	}
	if msg.MethodName() != "" || len(msg.ID) == 0 || (emptyJSON(msg.Result) && emptyJSON(msg.Error)) {
		return false // a request or notification; an empty response mcp-go accepts (202)
	}
	// handleSamplingResponse: a response nobody here waits for.
	if r.Header.Get("Mcp-Session-Id") == "" {
		WriteError(w, http.StatusBadRequest, msg.ID, mcp.INVALID_REQUEST,
			"a response must carry the Mcp-Session-Id of the session whose request it answers", nil)
		return true
	}
	WriteError(w, http.StatusNotFound, msg.ID, mcp.INVALID_REQUEST,
		"no request "+string(msg.ID)+" is waiting for an answer from this session", nil)
	return true
}

// refuseVersion answers an MCP-Protocol-Version header mcp-go does not
// implement (rejectUnsupportedProtocolVersion; absent is accepted).
func refuseVersion(w http.ResponseWriter, version string, id any) bool {
	if version == "" || mcp.IsValidProtocolVersion(version) {
		return false
	}
	WriteError(w, http.StatusBadRequest, id, mcp.INVALID_REQUEST, "Unsupported protocol version: "+version, nil)
	return true
}

// emptyJSON reports an absent member, null, {} or [] (mcp-go's
// isJSONEmpty).
func emptyJSON(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return true
	}
	if len(t) < 2 || !(t[0] == '{' && t[len(t)-1] == '}' || t[0] == '[' && t[len(t)-1] == ']') {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}
