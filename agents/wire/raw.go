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
// a 2026-07-28 caller (decorate: resultType and the server's identity in
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

// decorateRaw is decorate for a raw result: resultType "complete" unless
// set, and the server's identity in _meta unless the result names one.
// The decorated result is head followed by rest. In the common case (no
// _meta) head is both members and rest the result after its '{' (so the
// result is not copied here); a result with a _meta of its own is rebuilt
// member by member, values kept as sent (head nil, rest the rebuilt
// result).
func decorateRaw(rr *RawResult, info json.RawMessage) (head, rest []byte, ok bool) {
	var meta map[string]json.RawMessage
	if rr.Meta != nil && json.Unmarshal(rr.Meta, &meta) != nil {
		return nil, nil, false
	}
	_, hasInfo := meta[mcp.MetaKeyServerInfo]
	needType := rr.ResultType == ""
	if hasInfo && !needType {
		return nil, rr.JSON, true
	}
	// A null _meta or resultType reads as absent, but its member is there
	// and must be replaced, not repeated: the result is rebuilt then (the
	// check may also hit the words inside content, which costs only time).
	nullMember := (rr.Meta == nil && bytes.Contains(rr.JSON, []byte(`"_meta"`))) ||
		(needType && bytes.Contains(rr.JSON, []byte(`"resultType"`)))
	if rr.Meta == nil && !nullMember {
		rest := bytes.TrimSpace(rr.JSON[1:])
		head := make([]byte, 0, len(info)+80)
		head = append(head, `{"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
		head = append(head, info...)
		head = append(head, '}')
		if needType {
			head = append(head, `,"resultType":"complete"`...)
		}
		if len(rest) > 0 && rest[0] != '}' {
			head = append(head, ',')
		}
		return head, rest, true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(rr.JSON, &top) != nil {
		return nil, nil, false
	}
	if !hasInfo {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[mcp.MetaKeyServerInfo] = info
		top["_meta"] = mustRaw(meta)
	}
	if needType {
		top["resultType"] = json.RawMessage(`"complete"`)
	}
	return nil, mustRaw(top), true
}

// mustRaw encodes members of raw JSON values without escaping HTML, so that
// the values stay as they came (bar insignificant space).
func mustRaw(v map[string]json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // raw values that were decoded from valid JSON always encode
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// SelfJSON is a server identity as Decorate puts it in _meta, for
// RawResponse.
func SelfJSON(self mcp.Implementation) json.RawMessage {
	b, _ := json.Marshal(self) // strings only: always encodes
	return b
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
