package wire

import (
	"encoding/json"
	"net/http"
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
