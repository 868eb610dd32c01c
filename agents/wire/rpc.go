package wire

import (
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// The one JSON-RPC error and result writer of the gateway's own answers
// (the gateway's checks of a body, the endpoint's refusals, a proxy's
// logging/setLevel and tasks). Gap: mcp-go v1.2.1 writes its JSON-RPC
// errors inside handlePost and exports no writer for a request it never
// sees. Retired by: an exported mcp-go writer of JSON-RPC responses.

// rpcError is a JSON-RPC error object; Data is omitted when nil.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// ErrorJSON is a JSON-RPC error response to id (a JSON value, or nil for
// null), in mcp-go's member order.
func ErrorJSON(id any, code int, msg string, data any) []byte {
	b, err := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", id, rpcError{code, msg, data}})
	if err != nil { // data that does not marshal: the error without it
		b, _ = json.Marshal(struct {
			JSONRPC string   `json:"jsonrpc"`
			ID      any      `json:"id"`
			Error   rpcError `json:"error"`
		}{"2.0", id, rpcError{Code: code, Message: msg}})
	}
	return b
}

// WriteError answers a request with id by a JSON-RPC error: application/json
// with status (200 for session-based callers, as mcp-go answers; for
// 2026-07-28 callers HTTPStatus of the code).
func WriteError(w http.ResponseWriter, status int, id any, code int, msg string, data any) {
	writeJSON(w, status, append(ErrorJSON(id, code, msg, data), '\n'))
}

// WriteResult answers a request with id by a JSON-RPC result.
func WriteResult(w http.ResponseWriter, id any, result any) {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Result  any    `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		WriteError(w, http.StatusOK, id, -32603, "encoding the result: "+err.Error(), nil)
		return
	}
	writeJSON(w, http.StatusOK, append(b, '\n'))
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// AnswerWithID is msg, a JSON-RPC answer as a Target wrote it, under
// another id: an error answer typed (the fast path gives it its HTTP
// status), a result as it came, its members in JSON-RPC's order.
func AnswerWithID(msg json.RawMessage, id any) any {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "malformed answer", nil)}
	}
	if e, ok := m["error"]; ok {
		var d struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(e, &d)
		var data any
		if len(d.Data) > 0 {
			data = d.Data
		}
		return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Error: mcp.NewJSONRPCErrorDetails(d.Code, d.Message, data)}
	}
	m["id"], _ = json.Marshal(id)
	b := make([]byte, 0, len(msg)+len(m["id"])+32)
	b = append(b, '{')
	for _, k := range []string{"jsonrpc", "id", "result"} {
		if v, ok := m[k]; ok {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(append(append(append(b, '"'), k...), `":`...), v...)
		}
	}
	return RawAnswer(append(b, '}'))
}

// RequestJSON is a JSON-RPC request of the gateway's own to a caller (an
// elicitation, sampling or roots request on a call's stream).
func RequestJSON(id string, method string, params any) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
}
