package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
)

// JSON-RPC error codes the gateway answers with itself.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// rpcError is a JSON-RPC error the gateway answers before mcp-go sees the
// message: id is the message's id when it could be read (else nil).
type rpcError struct {
	id   any
	code int
	msg  string
}

// envelope is the part of a JSON-RPC message checkMessage looks at.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// checkMessage rejects a POST body that is not one JSON-RPC 2.0 message with
// an error that says what is wrong. mcp-go would answer "not valid json" for
// well-formed JSON that is not an object, accept a message with neither a
// method nor a result as an empty response (202, silently), and fail on a
// method or id of the wrong type with a parse error.
func checkMessage(body []byte) *rpcError {
	var env envelope
	err := json.Unmarshal(body, &env)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &rpcError{code: rpcParseError, msg: "parse error: the request body is not valid json: " + err.Error()}
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); err != nil || len(trimmed) == 0 || trimmed[0] != '{' {
		return &rpcError{code: rpcInvalidRequest, msg: "invalid request: a JSON-RPC message must be a JSON object (batches are not supported)"}
	}
	var id any
	switch {
	case string(env.ID) == "null" && !isNull(env.Method):
		// mcp-go would take it for a notification and never answer.
		return &rpcError{code: rpcInvalidRequest, msg: "invalid request: id must not be null (omit it for a notification)"}
	case isNull(env.ID):
	case env.ID[0] == '"' || env.ID[0] == '-' || (env.ID[0] >= '0' && env.ID[0] <= '9'):
		_ = json.Unmarshal(env.ID, &id)
	default:
		return &rpcError{code: rpcInvalidRequest, msg: "invalid request: id must be a string or a number"}
	}
	if string(env.JSONRPC) != `"2.0"` {
		return &rpcError{id: id, code: rpcInvalidRequest, msg: `invalid request: jsonrpc must be "2.0"`}
	}
	switch {
	case !isNull(env.Method) && env.Method[0] != '"':
		return &rpcError{id: id, code: rpcInvalidRequest, msg: "invalid request: method must be a string"}
	case isNull(env.Method) && len(env.Result) == 0 && len(env.Error) == 0:
		return &rpcError{id: id, code: rpcInvalidRequest, msg: "invalid request: the message has no method (and is not a response)"}
	}
	return nil
}

// isNull reports an absent or null member.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// servesRunningCall reports whether a POST body is a JSON-RPC response (a
// caller's answer to a server-to-client request) or a
// notifications/cancelled: messages for a call that is already running.
func servesRunningCall(body []byte) bool {
	var env envelope
	if json.Unmarshal(body, &env) != nil {
		return false
	}
	return isNull(env.Method) || string(env.Method) == `"notifications/cancelled"`
}
