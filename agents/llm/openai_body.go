// The OpenAI request body, written by hand: the one hand encoder kept.
//
// It replaces json.Marshal of openai-go's ChatCompletionNewParams (the SDK's
// reflective encoder, which then re-parses the result to merge the extra
// fields, after which encoding/json compacts it again) for the body of
// every Chat Completions call, and caches each tool definition's encoding
// (toolJSON) instead of having the SDK re-read every schema per call. The
// bytes are the SDK's, byte for byte (TestOpenAIBodyMatchesSDK,
// FuzzOpenAIBody); requests it is unsure of go through the SDK types
// (openAIBodySDK in openai_request.go).
//
// Why: the agent-loop benchmark (test/bench, 64 callers, 2 interleaved
// runs each, 2 shared cores) measured gateway CPU per call 328-340 µs with
// it, 415-433 µs with json.Marshal of the SDK params and the tool cache,
// 445-485 µs with json.Marshal alone: the CPU-bound ceiling 5882-6091
// calls/s against 4615-4819 (-20%) and 4124-4494 (-26%), calls/s through
// the gateway 2617-2746 against 2205-2383 and 1956-2456. The Anthropic
// encoder of the same kind was removed: the agent loop does not use it.
//
// The switch: sdk_body: true on a provider (models.providers.<name>,
// ProviderConfig.SDKBody) encodes its bodies through the SDK types.
//
// Parts, in order: the body (openAIBody), the SDK's object merge
// (objectWriter), encoding/json's text appenders, the tool cache, the
// messages.

package llm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

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

// The encoder writes a body as openai-go's param.MarshalWithExtras merges
// one: the SDK's own members in its struct order, each replaced in place by
// an extra field of the same name, then the other extra fields, by key.
// objectWriter is that merge; openAIWriter supplies the members (sdkObject).

// sdkObject is one request body's members as an SDK's param types define
// them, with the extra fields merged into it.
type sdkObject interface {
	// hasField reports whether the SDK types encode the member k.
	hasField(k string) bool
	// field writes the value of the member k as the SDK types encode it.
	field(k string)
	// extra returns the extra field k, if the request has one.
	extra(k string) (any, bool)
	// value writes an extra field's value as the SDK's merge encodes it.
	value(v any)
}

// objectWriter writes one JSON object member by member.
type objectWriter struct {
	b       []byte
	members int
	bad     bool // a value the SDK path must encode (or refuse)
}

// object writes o's members: fields are the SDK's own in struct order,
// added the extra fields the encoder may add itself (when o.extra has
// them), and params the extra fields of the request's config.
func (w *objectWriter) object(o sdkObject, fields, added []string, params map[string]any) {
	w.b = append(w.b, '{')
	for _, k := range fields {
		if !o.hasField(k) {
			continue
		}
		w.key(k)
		if v, ok := o.extra(k); ok {
			o.value(v)
		} else {
			o.field(k)
		}
	}
	var buf [16]string
	for _, k := range extraKeys(o, buf[:0], added, params) {
		if !o.hasField(k) {
			v, _ := o.extra(k)
			w.key(k)
			o.value(v)
		}
	}
}

// key starts the member k.
func (w *objectWriter) key(k string) {
	if w.members > 0 {
		w.b = append(w.b, ',')
	}
	w.members++
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
}

// extraKeys appends to keys, sorted and once each, the names of the extra
// fields: those of added that o has, and those of params.
func extraKeys(o sdkObject, keys, added []string, params map[string]any) []string {
	for _, k := range added {
		if _, ok := o.extra(k); ok {
			keys = append(keys, k)
		}
	}
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// end appends the definitions of tools, if any, and closes the object.
func (w *objectWriter) end(cache *toolJSON, tools []Tool) ([]byte, error) {
	if len(tools) > 0 {
		w.b = append(w.b, `,"tools":`...)
		var err error
		if w.b, err = cache.appendArray(w.b, tools); err != nil {
			return nil, err
		}
	}
	return append(w.b, '}'), nil
}

// The appenders below write JSON text the way encoding/json writes it, so
// that a body built by hand is byte for byte the body the SDKs produce
// (their encoders are forks of encoding/json, and encoding/json compacts
// every MarshalJSON result with HTML escaping on).

// jsonPlain marks the ASCII bytes a JSON string carries unescaped: not a
// control character, quote or backslash, and not <, > or & (HTML escaping).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendJSONString appends s as a quoted JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONChars(b, s)
	return append(b, '"')
}

// appendJSONChars appends the escaped characters of s without quotes.
// Invalid UTF-8 becomes U+FFFD; U+2028 and U+2029 are escaped because
// JavaScript treats them as line ends.
func appendJSONChars(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendJSONEscape(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && size == 1:
			esc = `\ufffd`
		case r == '\u2028':
			esc = `\u2028`
		case r == '\u2029':
			esc = `\u2029`
		default:
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// appendJSONEscape appends the escape sequence of an ASCII byte that a JSON
// string cannot carry as is.
func appendJSONEscape(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

// appendJSONFloat appends a finite f in encoding/json's float64 format:
// exponent notation outside [1e-6, 1e21), with no padded exponent digits.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 → e-7
		b = b[:n-1]
	}
	return b
}

// toolJSON caches the encoded form of tool definitions for one provider,
// keyed by name, description and schema. The SDKs' nested marshalling
// re-reads every schema at every level on every call, which made tool
// definitions most of an agent's CPU per call once it offered more than a
// few tools; each definition is now encoded once (by the SDK types, so the
// wire form is unchanged) and the request's tools array is appended to the
// encoded body. Tools change only with configs and downstream servers; past
// maxEntries the cache starts over.
type toolJSON struct {
	encode     func(Tool) ([]byte, error)
	maxEntries int

	mu sync.Mutex
	m  map[string][]byte
}

func newToolJSON(encode func(Tool) ([]byte, error)) *toolJSON {
	return &toolJSON{encode: encode, maxEntries: 4096, m: map[string][]byte{}}
}

// get returns t's encoded definition. The key is built in a stack buffer
// and looked up as string(key), which does not copy it: a hit allocates
// nothing, where building the key as a string cost more than writing the
// rest of an OpenAI request body.
func (c *toolJSON) get(t Tool) ([]byte, error) {
	var buf [1024]byte
	key := append(buf[:0], t.Name...)
	key = append(append(key, 0), t.Description...)
	key = append(append(key, 0), t.InputSchema...)
	c.mu.Lock()
	b, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := c.encode(t)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	c.mu.Lock()
	if len(c.m) >= c.maxEntries {
		clear(c.m)
	}
	c.m[string(key)] = b
	c.mu.Unlock()
	return b, nil
}

// appendTools returns body, an encoded JSON object, with a "tools" member
// holding tools' cached definitions.
func (c *toolJSON) appendTools(body []byte, tools []Tool) ([]byte, error) {
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return nil, fmt.Errorf("encoding request: not a JSON object")
	}
	obj := bytes.TrimRight(body[:end], " \t\r\n")
	out := make([]byte, 0, len(body)+len(tools)*512)
	out = append(out, obj...)
	if obj[len(obj)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, `"tools":`...)
	out, err := c.appendArray(out, tools)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// appendArray appends tools' cached definitions to b as a JSON array.
func (c *toolJSON) appendArray(b []byte, tools []Tool) ([]byte, error) {
	b = append(b, '[')
	for i, t := range tools {
		def, err := c.get(t)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, def...)
	}
	return append(b, ']'), nil
}

// hasOpenAIMessages reports whether openAIMessages would return any message:
// the SDK omits an empty messages member.
func hasOpenAIMessages(req *Request) bool {
	if req.System != "" {
		return true
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser, RoleAssistant, RoleTool, RoleSystem:
			return true
		}
	}
	return false
}

// messages writes the conversation as openAIMessages converts it,
// including the user message that carries the images of each run of tool
// results.
func (w *openAIWriter) messages() {
	w.b = append(w.b, '[')
	if w.req.System != "" {
		w.b = append(w.b, `{"content":`...)
		w.b = appendJSONString(w.b, w.req.System)
		w.b = append(w.b, `,"role":"system"}`...)
	}
	msgs := w.req.Messages
	run := 0 // the current run of tool results is msgs[run:i]
	for i, m := range msgs {
		if m.Role != RoleTool {
			w.toolImages(msgs[run:i])
			run = i + 1
		}
		switch m.Role {
		case RoleUser:
			w.user(m)
		case RoleAssistant:
			w.assistant(m)
		case RoleTool:
			w.tool(m)
		case RoleSystem:
			w.elem()
			w.b = append(w.b, `{"content":`...)
			w.b = appendJSONString(w.b, m.Text)
			w.b = append(w.b, `,"role":"system"}`...)
		}
	}
	w.toolImages(msgs[run:])
	w.b = append(w.b, ']')
}

// elem separates an array element from the one before it, if any.
func (w *openAIWriter) elem() {
	if w.b[len(w.b)-1] != '[' {
		w.b = append(w.b, ',')
	}
}

func (w *openAIWriter) user(m Message) {
	w.elem()
	if len(m.Images) == 0 {
		w.b = append(w.b, `{"content":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, `,"role":"user"}`...)
		return
	}
	w.b = append(w.b, `{"content":[`...)
	if m.Text != "" {
		w.b = append(w.b, `{"text":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, `,"type":"text"}`...)
	}
	w.images(m.Images)
	w.b = append(w.b, `],"role":"user"}`...)
}

func (w *openAIWriter) assistant(m Message) {
	w.elem()
	w.b = append(w.b, '{')
	if m.Text != "" || len(m.ToolCalls) == 0 {
		w.b = append(w.b, `"content":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, ',')
	}
	if len(m.ToolCalls) > 0 {
		w.b = append(w.b, `"tool_calls":[`...)
		for _, tc := range m.ToolCalls {
			w.elem()
			w.b = append(w.b, `{"id":`...)
			w.b = appendJSONString(w.b, tc.ID)
			w.b = append(w.b, `,"function":{"arguments":`...)
			w.b = appendJSONString(w.b, string(argsOrEmpty(tc.Arguments)))
			w.b = append(w.b, `,"name":`...)
			w.b = appendJSONString(w.b, tc.Name)
			w.b = append(w.b, `},"type":"function"}`...)
		}
		w.b = append(w.b, `],`...)
	}
	w.b = append(w.b, `"role":"assistant"}`...)
}

func (w *openAIWriter) tool(m Message) {
	w.elem()
	w.b = append(w.b, `{"content":"`...)
	if m.IsError {
		w.b = append(w.b, "Error: "...)
	}
	w.b = appendJSONChars(w.b, toolResultText(m))
	w.b = append(w.b, `","tool_call_id":`...)
	w.b = appendJSONString(w.b, m.ToolCallID)
	w.b = append(w.b, `,"role":"tool"}`...)
}

// toolImages writes the user message carrying the images of run, a run of
// tool results, if they have any.
func (w *openAIWriter) toolImages(run []Message) {
	if !slices.ContainsFunc(run, func(m Message) bool { return len(m.Images) > 0 }) {
		return
	}
	w.elem()
	w.b = append(w.b, `{"content":[`...)
	for _, m := range run {
		if len(m.Images) == 0 {
			continue
		}
		w.elem()
		w.b = append(w.b, `{"text":"Image(s) returned by tool call `...)
		w.b = appendJSONChars(w.b, m.ToolCallID)
		w.b = append(w.b, `:","type":"text"}`...)
		w.images(m.Images)
	}
	w.b = append(w.b, `],"role":"user"}`...)
}

// images writes image content parts holding data URLs (see dataURL).
func (w *openAIWriter) images(imgs []Image) {
	for _, img := range imgs {
		w.elem()
		w.b = append(w.b, `{"image_url":{"url":"data:`...)
		w.b = appendJSONChars(w.b, imageMIME(img))
		w.b = append(w.b, ";base64,"...)
		w.b = base64.StdEncoding.AppendEncode(w.b, img.Data)
		w.b = append(w.b, `"},"type":"image_url"}`...)
	}
}
