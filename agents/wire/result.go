package wire

import (
	"encoding/json"
	"fmt"
)

// RawResult is a tools/call result as the downstream sent it, with the
// members a caller acts on read out of it (agents/mcpclient's raw calls).
type RawResult struct {
	JSON       json.RawMessage // the JSON-RPC result member, byte for byte
	IsError    bool
	ResultType string          // "" when absent
	Meta       json.RawMessage // the _meta member; nil when absent

	// Passed: the result was passed through to the caller as the call's
	// answer (PassThrough.Relay); JSON is nil and Size its length.
	Passed bool
	Size   int
}

// Len is the result's length in bytes.
func (r *RawResult) Len() int {
	if r.Passed {
		return r.Size
	}
	return len(r.JSON)
}

// RPCError is a JSON-RPC error for a downstream, as a relay of its
// server-to-client request returns it: the caller's own error answer, or
// why the request could not reach a caller.
type RPCError struct {
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }
