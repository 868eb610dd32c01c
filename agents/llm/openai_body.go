package llm

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/openai/openai-go/v3/packages/param"
)

// openAIBody encodes req as a streaming Chat Completions request: byte for
// byte the body openAIBodySDK builds from openai-go's param types, written
// directly. The SDK encodes those types with a reflective JSON encoder, then
// re-parses the result to merge the extra fields, and encoding/json compacts
// it once more: about a tenth of the gateway's CPU per agent-loop call, for
// a body a few appends can write. The rare requests openAIDirect rejects,
// and extra values the SDK drops (param.Omit) or refuses (NaN, a failing
// MarshalJSON), still go through the SDK, so they fare exactly as before.
func openAIBody(req Request, tools *toolJSON) ([]byte, error) {
	body, ok, err := openAIBodyDirect(req, tools)
	if !ok {
		return openAIBodySDK(req, tools)
	}
	return body, err
}

// openAIBodyDirect writes the body; ok is false when req needs the SDK path.
func openAIBodyDirect(req Request, tools *toolJSON) (body []byte, ok bool, err error) {
	if !openAIDirect(req) {
		return nil, false, nil
	}
	w := openAIWriter{objectWriter: objectWriter{b: make([]byte, 0, bodySizeHint(req))}, req: req}
	w.object(&w, openAIFields[:], openAIExtraFields[:], req.Params.Extra)
	if w.bad {
		return nil, false, nil
	}
	body, err = w.end(tools, req.Tools)
	return body, true, err
}

// openAIDirect reports whether openAIBody may write req itself. It leaves
// to the SDK the shapes whose SDK encoding is an error or a quirk not worth
// reproducing: extra keys the SDK's merge reads as sjson paths ("", "a.b",
// "x|y"), sampling parameters that are NaN or infinite (an encoding error),
// and extra "tools" alongside tools (the SDK then still converts every tool
// schema, and fails on an invalid one, before extra.tools replaces them).
func openAIDirect(req Request) bool {
	p := req.Params
	for k := range p.Extra {
		if k == "" || param.EscapeSJSONKey(k) != k {
			return false
		}
	}
	if _, ok := p.Extra["tools"]; ok && len(req.Tools) > 0 {
		return false
	}
	for _, f := range [...]*float64{p.Temperature, p.TopP, p.PresencePenalty, p.FrequencyPenalty} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return false
		}
	}
	return true
}

// bodySizeHint estimates the encoded size of req in either provider's body,
// without its tools' definitions, so that the body is seldom copied while
// it grows.
func bodySizeHint(req Request) int {
	n := 256 + len(req.Model) + len(req.System) + len(req.Tools)*512
	for _, m := range req.Messages {
		n += 64 + len(m.Text) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 96 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)*5/4
		}
		for _, img := range m.Images {
			n += 128 + len(img.MIMEType) + base64.StdEncoding.EncodedLen(len(img.Data))
		}
	}
	return n
}

// openAIFields are the members ChatCompletionNewParams encodes for a
// Request, in the SDK's struct order: the order of the body.
var openAIFields = [...]string{"messages", "model", "frequency_penalty", "max_tokens",
	"presence_penalty", "seed", "temperature", "top_p", "stop"}

// openAIExtraFields are the members openAIBodySDK passes to the SDK as
// extra fields: stream and stream_options always, the others when set.
var openAIExtraFields = [...]string{"response_format", "stream", "stream_options", "tool_choice", "top_k"}

// openAIWriter writes the body of one request, up to its tools.
type openAIWriter struct {
	objectWriter
	req Request
}

// hasField reports whether the SDK types encode the member k.
func (w *openAIWriter) hasField(k string) bool {
	p := &w.req.Params
	switch k {
	case "messages":
		return hasOpenAIMessages(&w.req)
	case "model":
		return w.req.Model != ""
	case "frequency_penalty":
		return p.FrequencyPenalty != nil
	case "max_tokens":
		return p.MaxTokens != nil
	case "presence_penalty":
		return p.PresencePenalty != nil
	case "seed":
		return p.Seed != nil
	case "temperature":
		return p.Temperature != nil
	case "top_p":
		return p.TopP != nil
	case "stop":
		return len(p.Stop) > 0
	}
	return false
}

// field writes the value of the member k as the SDK types encode it.
func (w *openAIWriter) field(k string) {
	p := &w.req.Params
	switch k {
	case "messages":
		w.messages()
	case "model":
		w.b = appendJSONString(w.b, w.req.Model)
	case "frequency_penalty":
		w.b = appendJSONFloat(w.b, *p.FrequencyPenalty)
	case "max_tokens":
		w.b = strconv.AppendInt(w.b, int64(*p.MaxTokens), 10)
	case "presence_penalty":
		w.b = appendJSONFloat(w.b, *p.PresencePenalty)
	case "seed":
		w.b = strconv.AppendInt(w.b, int64(*p.Seed), 10)
	case "temperature":
		w.b = appendJSONFloat(w.b, *p.Temperature)
	case "top_p":
		w.b = appendJSONFloat(w.b, *p.TopP)
	case "stop":
		w.b = append(w.b, '[')
		for i, s := range p.Stop {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendJSONString(w.b, s)
		}
		w.b = append(w.b, ']')
	}
}

// openAIStreamOptions stands for the stream_options extra field.
type openAIStreamOptions struct{}

// extra returns the extra field k, if the request has one: params.extra
// wins over the fields openAIBodySDK adds itself.
func (w *openAIWriter) extra(k string) (any, bool) {
	p := &w.req.Params
	if v, ok := p.Extra[k]; ok {
		return v, true
	}
	switch k {
	case "stream":
		return true, true
	case "stream_options":
		return openAIStreamOptions{}, true
	case "top_k":
		if p.TopK != nil {
			return *p.TopK, true
		}
	case "response_format":
		return p.ResponseFormat, p.ResponseFormat != nil
	case "tool_choice":
		return p.ToolChoice, p.ToolChoice != nil && len(w.req.Tools) > 0
	}
	return nil, false
}

// value writes an extra field's value as the SDK's merge encodes it (with
// sjson.SetBytes): strings and []byte as strings, bools and integers as
// such, floats in plain decimal notation, everything else with
// encoding/json. A value the SDK drops (param.Omit) or fails on (NaN, a
// failing MarshalJSON) marks the body bad.
func (w *openAIWriter) value(v any) {
	switch v := v.(type) {
	case openAIStreamOptions:
		w.b = append(w.b, `{"include_usage":true}`...)
	case string:
		w.b = appendJSONString(w.b, v)
	case []byte:
		w.b = appendJSONString(w.b, string(v))
	case bool:
		w.b = strconv.AppendBool(w.b, v)
	case int:
		w.b = strconv.AppendInt(w.b, int64(v), 10)
	case int64:
		w.b = strconv.AppendInt(w.b, v, 10)
	case float32:
		w.plainFloat(float64(v))
	case float64:
		w.plainFloat(v)
	default:
		w.marshal(v)
	}
}

func (w *openAIWriter) plainFloat(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.bad = true
		return
	}
	w.b = strconv.AppendFloat(w.b, f, 'f', -1, 64)
}

func (w *openAIWriter) marshal(v any) {
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
