package wire

// Downstream results as raw JSON (test/bench/README.md, "Wire-level code"). When the
// proxy's Downstream can return a tools/call result as the downstream sent it
// (*mcpclient.Manager's CallToolRaw: a raw POST on Streamable HTTP sessions,
// mcp-go's client otherwise), the fast path writes those bytes inside its
// JSON-RPC response instead of decoding them into mcp-go's types and
// encoding them again. That is also more faithful (results come
// back unchanged): mcp-go's round trip sorts members, drops members it does
// not know, turns large integers into floats and escapes HTML characters.
// The only changes made to a result are the ones mcp-go's server makes for
// a 2026-07-28 caller (decorate.go: resultType and the server's identity in
// _meta), and line breaks taken out of a pretty-printed result written as
// an SSE event, which cannot span lines. A result that asks for input
// (resultType input_required) is decoded and takes the typed path, whose
// answer to it is an error.

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// RawAnswer is a complete JSON-RPC message, written as it is.
type RawAnswer []byte

// RawResponse is the JSON-RPC response with result rr for request id, or
// false when rr must take the typed path. self is the answering server's
// identity as JSON (SelfJSON), put in a 2026-07-28 result's _meta. The
// response is built in one buffer of its final size: the result is
// copied once.
func RawResponse(id any, rr *RawResult, modern bool, self json.RawMessage) (RawAnswer, bool) {
	if rr.ResultType == string(mcp.ResultTypeInputRequired) {
		return nil, false
	}
	head, rest := []byte(nil), rr.JSON
	if modern {
		var ok bool
		if head, rest, ok = decorateRaw(rr, self); !ok {
			return nil, false
		}
	}
	idJSON, err := json.Marshal(id)
	if err != nil {
		return nil, false
	}
	const open, member = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(open)+len(idJSON)+len(member)+len(head)+len(rest)+2) // +2: '}' and the '\n' a JSON answer ends with
	b = append(b, open...)
	b = append(b, idJSON...)
	b = append(b, member...)
	b = append(b, head...)
	b = append(b, rest...)
	return append(b, '}'), true
}

// TypedResult decodes a raw result as mcp-go's client would, for the typed
// answer of a result RawResponse declines.
func TypedResult(rr *RawResult) (*mcp.CallToolResult, error) {
	res, err := mcp.ParseCallToolResult(&rr.JSON)
	if err != nil {
		return nil, fmt.Errorf("the downstream's result: %w", err)
	}
	return res, nil
}

// oneLine returns msg without line breaks (compacted), as an SSE data line
// needs it.
func oneLine(msg []byte) []byte {
	if !bytes.ContainsAny(msg, "\r\n") {
		return msg
	}
	var buf bytes.Buffer
	if json.Compact(&buf, msg) != nil {
		return msg // not reached: msg is valid JSON
	}
	return buf.Bytes()
}
