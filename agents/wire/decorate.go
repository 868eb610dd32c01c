package wire

// The one result decorator: what mcp-go's decorateResponse (v1.2.1) does to
// a result for a 2026-07-28 caller, resultType "complete" unless set and
// the server's identity in _meta unless the result names one, for a typed
// result (Decorate), a raw one (RawResponse, DecorateJSON) and the held
// members of one streamed (body.go). mcp-go decorates the
// results of its own handlers; these are the answers the gateway writes
// itself.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
)

// Decorate stamps a typed result for a 2026-07-28 caller as mcp-go's
// decorateResponse does: resultType "complete" unless set, and the server's
// identity in _meta unless the result names one.
func Decorate(res mcp.ResultMetadata, self mcp.Implementation) {
	if res.GetResultType() == "" {
		res.SetResultType(mcp.ResultTypeComplete)
	}
	if meta := res.EnsureResultMeta(); meta != nil && meta.ServerInfo() == nil {
		meta.SetServerInfo(self)
	}
}

// decorateMembers is Decorate for a raw result's _meta (raw JSON: an
// object, null or nil for absent) and resultType ("" when absent or null):
// the members to write. self is the server's identity as JSON (SelfJSON);
// nil leaves _meta as it is. A _meta that names the server is kept as
// sent.
func decorateMembers(meta []byte, resultType string, self json.RawMessage) (newMeta, newType []byte, err error) {
	if self != nil {
		var m map[string]json.RawMessage
		if len(meta) > 0 {
			if err := json.Unmarshal(meta, &m); err != nil {
				return nil, nil, fmt.Errorf("_meta: %w", err)
			}
		}
		if _, ok := m[mcp.MetaKeyServerInfo]; !ok {
			if m == nil {
				m = map[string]json.RawMessage{}
			}
			m[mcp.MetaKeyServerInfo] = self
			meta = mustRaw(m)
		}
	}
	t := strconv.Quote(resultType)
	if resultType == "" {
		t = `"` + string(mcp.ResultTypeComplete) + `"`
	}
	return meta, []byte(t), nil
}

// DecorateJSON is Decorate for a whole result as JSON, rebuilt member by
// member with the values kept as sent when a member is added; self nil leaves _meta as it is (a
// task's result, which the endpoint answers). A result that is not an
// object, or whose resultType is not a string, comes back as it is.
func DecorateJSON(res json.RawMessage, self json.RawMessage) json.RawMessage {
	out, err := decorateJSON(res, self)
	if err != nil {
		return res
	}
	return out
}

func decorateJSON(res json.RawMessage, self json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(res, &top); err != nil || top == nil {
		return nil, fmt.Errorf("the result is not an object")
	}
	var resultType string
	if err := json.Unmarshal(orNull(top["resultType"]), &resultType); err != nil {
		return nil, fmt.Errorf("resultType: %w", err)
	}
	meta, typ, err := decorateMembers(top["_meta"], resultType, self)
	if err != nil {
		return nil, err
	}
	changed := resultType == ""
	if meta != nil && !bytes.Equal(meta, top["_meta"]) {
		top["_meta"], changed = meta, true
	}
	if !changed {
		return res, nil // nothing to add: the result as sent
	}
	if resultType == "" {
		top["resultType"] = typ
	}
	return mustRaw(top), nil
}

// decorateRaw is decorate for a raw result (RawResponse). The decorated
// result is head followed by rest. In the common case (no _meta) head is
// both members and rest the result after its '{' (so the result is not
// copied here); a result with a _meta of its own is rebuilt member by
// member, values kept as sent (head nil, rest the rebuilt result).
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
	out, err := decorateJSON(rr.JSON, info)
	if err != nil {
		return nil, nil, false
	}
	return nil, out, true
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
