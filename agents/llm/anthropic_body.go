package llm

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// anthropicBody encodes req as a streaming Messages request: the body
// anthropicBodySDK builds from anthropic-sdk-go's param types, written
// directly. The SDK encodes those types with a reflective JSON encoder,
// splices each extra field in with sjson (stream is always one), and
// encoding/json compacts the result once more: some 28 µs per agent-loop
// call for a body a few appends can write. The one liberty taken is order:
// the SDK appends the extra fields that are not its own members in map
// order, which varies from call to call, and this writes them sorted by key,
// one of the orders the SDK produces. The requests anthropicDirect rejects,
// and extra values the SDK drops (param.Omit) or refuses (NaN, a failing
// MarshalJSON), still go through the SDK, so they fare exactly as before.
func anthropicBody(req Request, tools *toolJSON) ([]byte, error) {
	body, ok, err := anthropicBodyDirect(req, tools)
	if !ok {
		return anthropicBodySDK(req, tools)
	}
	return body, err
}

// anthropicBodyDirect writes the body; ok is false when req needs the SDK
// path.
func anthropicBodyDirect(req Request, tools *toolJSON) (body []byte, ok bool, err error) {
	if !anthropicDirect(req) {
		return nil, false, nil
	}
	w := anthropicWriter{objectWriter: objectWriter{b: make([]byte, 0, bodySizeHint(req))}, req: req}
	w.object(&w, anthropicFields[:], anthropicExtraFields[:], req.Params.Extra)
	if w.bad {
		return nil, false, nil
	}
	defs := req.Tools
	if _, extraTools := req.Params.Extra["tools"]; extraTools {
		defs = nil // params.extra's tools are written already
	}
	body, err = w.end(tools, defs)
	return body, true, err
}

// anthropicDirect reports whether anthropicBody may write req itself. It
// leaves to the SDK the shapes whose SDK encoding is an error or depends on
// sjson's path syntax: extra keys other than plain identifiers (the SDK
// merges each through an sjson path, whose rules for numbers, "-1",
// brackets and escapes are not worth reproducing for keys no API field
// has; an empty key is an error), sampling
// parameters that are NaN or infinite (an encoding error), and extra
// "tools" alongside tools (the SDK then still converts every tool schema,
// and fails on an invalid one, before extra.tools replaces them).
func anthropicDirect(req Request) bool {
	p := req.Params
	for k := range p.Extra {
		if !plainKey(k) {
			return false
		}
	}
	if _, ok := p.Extra["tools"]; ok && len(req.Tools) > 0 {
		return false
	}
	for _, f := range [...]*float64{p.Temperature, p.TopP} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return false
		}
	}
	return true
}

// plainKey reports whether k is an identifier: a letter or underscore,
// then letters, digits, underscores and hyphens.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return k != ""
}

// anthropicFields are the members MessageNewParams encodes for a Request,
// in the SDK's struct order: the order of the body.
var anthropicFields = [...]string{"max_tokens", "messages", "model", "temperature", "top_k",
	"top_p", "stop_sequences", "system"}

// anthropicExtraFields are the members anthropicBodySDK passes to the SDK as
// extra fields: stream always, tool_choice when set and there are tools.
var anthropicExtraFields = [...]string{"stream", "tool_choice"}

// anthropicWriter writes the body of one request, up to its tools.
type anthropicWriter struct {
	objectWriter
	req Request
}

// hasField reports whether the SDK types encode the member k.
func (w *anthropicWriter) hasField(k string) bool {
	p := &w.req.Params
	switch k {
	case "max_tokens":
		return true
	case "messages":
		return hasAnthropicMessages(w.req.Messages)
	case "model":
		return w.req.Model != ""
	case "temperature":
		return p.Temperature != nil
	case "top_k":
		return p.TopK != nil
	case "top_p":
		return p.TopP != nil
	case "stop_sequences":
		return p.Stop != nil
	case "system":
		return w.req.System != ""
	}
	return false
}

// field writes the value of the member k as the SDK types encode it.
func (w *anthropicWriter) field(k string) {
	p := &w.req.Params
	switch k {
	case "max_tokens":
		n := int64(defaultAnthropicMaxTokens)
		if p.MaxTokens != nil && *p.MaxTokens > 0 {
			n = int64(*p.MaxTokens)
		}
		w.b = strconv.AppendInt(w.b, n, 10)
	case "messages":
		w.messages()
	case "model":
		w.b = appendJSONString(w.b, w.req.Model)
	case "temperature":
		w.b = appendJSONFloat(w.b, *p.Temperature)
	case "top_k":
		w.b = strconv.AppendInt(w.b, int64(*p.TopK), 10)
	case "top_p":
		w.b = appendJSONFloat(w.b, *p.TopP)
	case "stop_sequences":
		w.b = append(w.b, '[')
		for i, s := range p.Stop {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendJSONString(w.b, s)
		}
		w.b = append(w.b, ']')
	case "system":
		w.b = append(w.b, `[{"text":`...)
		w.b = appendJSONString(w.b, w.req.System)
		w.b = append(w.b, `,"type":"text"}]`...)
	}
}

// anthropicChoice stands for a tool_choice object of the given type (see
// anthropicToolChoice).
type anthropicChoice string

// extra returns the extra field k, if the request has one: params.extra
// wins over the fields anthropicBodySDK adds itself.
func (w *anthropicWriter) extra(k string) (any, bool) {
	p := &w.req.Params
	if v, ok := p.Extra[k]; ok {
		return v, true
	}
	switch k {
	case "stream":
		return true, true
	case "tool_choice":
		if p.ToolChoice == nil || len(w.req.Tools) == 0 {
			return nil, false
		}
		if t, ok := anthropicChoiceType(p.ToolChoice); ok {
			return anthropicChoice(t), true
		}
		return p.ToolChoice, true
	}
	return nil, false
}

// value writes an extra field's value as the SDK's merge encodes it: with
// encoding/json, so floats in exponent notation at the extremes. A value
// the SDK drops (param.Omit) or fails on (NaN, a failing MarshalJSON) marks
// the body bad.
func (w *anthropicWriter) value(v any) {
	switch v := v.(type) {
	case anthropicChoice:
		w.b = append(w.b, `{"type":`...)
		w.b = appendJSONString(w.b, string(v))
		w.b = append(w.b, '}')
	case nil:
		w.b = append(w.b, "null"...)
	case string:
		w.b = appendJSONString(w.b, v)
	case bool:
		w.b = strconv.AppendBool(w.b, v)
	case int:
		w.b = strconv.AppendInt(w.b, int64(v), 10)
	case int64:
		w.b = strconv.AppendInt(w.b, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			w.bad = true
			return
		}
		w.b = appendJSONFloat(w.b, v)
	default:
		if v == any(param.Omit) {
			w.bad = true
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			w.bad = true
			return
		}
		w.b = append(w.b, b...)
	}
}
