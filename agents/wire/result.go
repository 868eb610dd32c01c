package wire

import (
	"encoding/json"
	"fmt"
)

// RawResult is a tools/call result as the downstream sent it, with the
// members a caller acts on read out of it (agents/mcpclient's raw calls):
// held in JSON, or, for a large one, still in the downstream's response
// body (Streamed, body.go), which the caller copies out and Close
// releases.
type RawResult struct {
	JSON       json.RawMessage // the JSON-RPC result member, byte for byte; nil while Streamed
	IsError    bool
	ResultType string          // "" when absent
	Meta       json.RawMessage // the _meta member; nil when absent

	// Size is a streamed result's length, once it has been copied.
	Size int

	body *resultBody // the streamed result's source; nil: held
}

// Streamed reports a result still in the downstream's response body:
// its facts (IsError, ResultType, Meta, Size) are known once it has been
// copied out (a BodyAnswer, Hold), and it must be closed.
func (r *RawResult) Streamed() bool { return r != nil && r.body != nil }

// Len is the result's length in bytes (a streamed one's once copied).
func (r *RawResult) Len() int {
	if r.body != nil {
		return r.Size
	}
	return len(r.JSON)
}

// OnClose runs f when a streamed result is closed, after it was copied
// (its facts set; err the copy's, nil when whole) or not (err says so);
// for a held result, now, with nil. Functions run in the order given.
func (r *RawResult) OnClose(f func(err error)) {
	if r.body == nil {
		f(nil)
		return
	}
	r.body.onClose(f)
}

// Close releases a streamed result's body, unless it is being copied
// (the copy then fails and closes it). A held result has nothing to
// release. The end of the call's context closes it too.
func (r *RawResult) Close() {
	if r.body != nil {
		r.body.close(errBodyUnread, false)
	}
}

// Hold reads a streamed result whole into JSON and closes it, for a
// result not copied out at once; a held result is left as it is.
func (r *RawResult) Hold() error {
	if r.body == nil {
		return nil
	}
	err := r.copyOut(&passWriter{hold: true})
	if err == nil {
		r.body = nil
	}
	return err
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
