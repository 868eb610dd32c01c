package gateway

import (
	"encoding/json"
	"errors"

	"github.com/pallasgw/pallasgw/agents/jsonrpc"
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

// checkMessage rejects a POST body that is not one JSON-RPC 2.0 message with
// an error that says what is wrong. mcp-go would answer "not valid json" for
// well-formed JSON that is not an object, accept a message with neither a
// method nor a result as an empty response (202, silently), and fail on a
// method or id of the wrong type with a parse error.
func checkMessage(body []byte) (*jsonrpc.Message, *rpcError) {
	env, err := jsonrpc.Parse(body)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return nil, &rpcError{code: rpcParseError, msg: "parse error: the request body is not valid json: " + err.Error()}
	}
	if err != nil {
		return nil, &rpcError{code: rpcInvalidRequest, msg: "invalid request: a JSON-RPC message must be a JSON object (batches are not supported)"}
	}
	var id any
	switch {
	case string(env.ID) == "null" && !jsonrpc.IsNull(env.Method):
		// mcp-go would take it for a notification and never answer.
		return nil, &rpcError{code: rpcInvalidRequest, msg: "invalid request: id must not be null (omit it for a notification)"}
	case jsonrpc.IsNull(env.ID):
	case env.ID[0] == '"' || env.ID[0] == '-' || (env.ID[0] >= '0' && env.ID[0] <= '9'):
		_ = json.Unmarshal(env.ID, &id)
	default:
		return nil, &rpcError{code: rpcInvalidRequest, msg: "invalid request: id must be a string or a number"}
	}
	if string(env.JSONRPC) != `"2.0"` {
		return nil, &rpcError{id: id, code: rpcInvalidRequest, msg: `invalid request: jsonrpc must be "2.0"`}
	}
	switch {
	case !jsonrpc.IsNull(env.Method) && env.Method[0] != '"':
		return nil, &rpcError{id: id, code: rpcInvalidRequest, msg: "invalid request: method must be a string"}
	case jsonrpc.IsNull(env.Method) && len(env.Result) == 0 && len(env.Error) == 0:
		return nil, &rpcError{id: id, code: rpcInvalidRequest, msg: "invalid request: the message has no method (and is not a response)"}
	}
	return env, nil
}

// servesRunningCall reports whether a POST body is a JSON-RPC response (a
// caller's answer to a server-to-client request) or a
// notifications/cancelled: messages for a call that is already running.
func servesRunningCall(msg *jsonrpc.Message) bool {
	return msg != nil && (jsonrpc.IsNull(msg.Method) || msg.MethodName() == "notifications/cancelled")
}
