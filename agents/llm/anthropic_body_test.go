package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// anthropicBodyCase is one request with the path anthropicBody must take
// for it.
type anthropicBodyCase struct {
	name string
	req  Request
	sdk  bool // left to the SDK path
}

func anthropicMessageCases() []anthropicBodyCase {
	conv := func(m ...Message) Request { return Request{Model: "claude", Messages: m} }
	calls := func(args ...string) Message {
		m := Message{Role: RoleAssistant}
		for i, a := range args {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: fmt.Sprint("c", i), Name: "f", Arguments: json.RawMessage(a)})
		}
		return m
	}
	result := func(id, text string, isErr bool, imgs ...Image) Message {
		return Message{Role: RoleTool, ToolCallID: id, Text: text, IsError: isErr, Images: imgs}
	}
	return []anthropicBodyCase{
		{name: "empty request"},
		{name: "model only", req: Request{Model: "claude-sonnet-4-5"}},
		{name: "system only", req: Request{System: "be brief"}},
		{name: "agent loop", req: Request{Model: "m", System: "be brief", Messages: agentLoop, Tools: bodyTools}},
		{name: "agent loop without system", req: Request{Model: "m", Messages: agentLoop, Tools: bodyTools}},
		{name: "awkward strings", req: Request{Model: awkward, System: awkward, Messages: []Message{
			{Role: RoleUser, Text: awkward}, calls(`{"k":"` + awkward + `"}`), result("c0"+awkward, awkward, true, img(awkward))}}},
		{name: "user text", req: conv(Message{Role: RoleUser, Text: "hello"})},
		{name: "empty user text", req: conv(Message{Role: RoleUser})},
		{name: "unknown role only", req: conv(Message{Role: "system", Text: "x"})},
		{name: "user images", req: conv(Message{Role: RoleUser, Images: []Image{img("image/png"), img("image/jpeg"), img(""), img("image/svg+xml"), img("a\"<b>\u2028"), {}}})},
		{name: "user text and image", req: conv(Message{Role: RoleUser, Text: "look", Images: []Image{img("image/webp")}})},
		{name: "assistant text", req: conv(Message{Role: RoleAssistant, Text: "sure"})},
		{name: "assistant empty", req: conv(Message{Role: RoleAssistant})},
		{name: "assistant empty arguments", req: conv(calls("", "null", "{}", " ", "[]", `"s"`, "1", "{", `{"a":1}x`))},
		{name: "assistant object arguments", req: conv(calls(" {\n\t\"q\" : \"<a href=\\\"x\\\">&amp;</a>\", \"u\":\"é😀\u2028\u2029\",\r\n \"n\" : [ 1 , 2e3 , true , null ] } ",
			`{"n":1e400,"bad":"`+"\xff\xed\xa0\x80"+`","esc":"\\u003c\\\\\"\\n","deep":{"a":{"b":[{}]}}}`, `{"k" :"v"}  `, "\r\n\t {\"a\":1}"))},
		{name: "assistant text and calls", req: conv(Message{Role: RoleAssistant, Text: "calling", ToolCalls: []ToolCall{{ID: "a", Name: "x", Arguments: json.RawMessage(`{"a":[1,2]}`)}}})},
		{name: "tool results", req: conv(calls("{}", "{}"), result("c0", "ok", false), result("c1", "boom", true))},
		{name: "empty tool results", req: conv(result("a", "", false), result("b", "", true), result("c", "", false, img("image/png")))},
		{name: "tool result images", req: conv(calls("{}"), result("c0", "see", false, img("image/png"), img("")), Message{Role: RoleUser, Text: "next"})},
		{name: "error result with image", req: conv(calls("{}"), result("c0", "", true, img("image/gif")))},
		{name: "two runs", req: conv(calls("{}"), result("c0", "a", false), calls("{}"), result("c0", "b", true), result("c1", "c", false))},
		{name: "unknown role inside run", req: conv(result("a", "x", false), Message{Role: "other"}, result("b", "y", false))},
		{name: "user after run", req: conv(result("a", "x", false), Message{Role: RoleUser, Text: "u"}, result("b", "y", false))},
	}
}

func anthropicParamCases() []anthropicBodyCase {
	base := func(p Params) Request {
		return Request{Model: "m", System: "s", Messages: agentLoop, Tools: bodyTools, Params: p}
	}
	noTools := func(p Params) Request { r := base(p); r.Tools = nil; return r }
	var cases []anthropicBodyCase
	for _, f := range []float64{0, 0.7, 1, 1e-7, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64, math.Copysign(0, -1), -0.5} {
		cases = append(cases, anthropicBodyCase{name: fmt.Sprint("floats ", f), req: base(Params{Temperature: ptr(f), TopP: ptr(-f)})})
	}
	for _, n := range []int{0, 1, -1, 40, 1000, math.MaxInt, math.MinInt} {
		cases = append(cases, anthropicBodyCase{name: fmt.Sprint("ints ", n), req: base(Params{MaxTokens: ptr(n), TopK: ptr(n)})})
	}
	for _, tc := range []any{"auto", "required", "any", "none", "function", map[string]any{"type": "tool", "name": "bare"},
		json.RawMessage(` {"type" : "any"} `), 3, false} {
		cases = append(cases, anthropicBodyCase{name: fmt.Sprintf("tool choice %v", tc), req: base(Params{ToolChoice: tc})})
	}
	return append(cases, []anthropicBodyCase{
		{name: "no params", req: base(Params{})},
		{name: "all params", req: base(Params{Temperature: ptr(0.2), TopP: ptr(0.9), TopK: ptr(40), MaxTokens: ptr(512),
			Stop: []string{"END", awkward}, PresencePenalty: ptr(0.1), FrequencyPenalty: ptr(0.3), Seed: ptr(7),
			ResponseFormat: map[string]any{"type": "json_object"}, ToolChoice: "auto", Extra: map[string]any{"metadata": map[string]any{"user_id": "u"}}})},
		{name: "one stop", req: base(Params{Stop: []string{"\n"}})},
		{name: "empty stop", req: base(Params{Stop: []string{}})},
		{name: "tool choice without tools", req: noTools(Params{ToolChoice: "required"})},
	}...)
}

func anthropicExtraCases() []anthropicBodyCase {
	base := func(extra map[string]any) Request {
		return Request{Model: "m", System: "s", Messages: agentLoop, Tools: bodyTools, Params: Params{Extra: extra}}
	}
	bare := func(p Params) Request { return Request{Params: p} }
	return []anthropicBodyCase{
		{name: "new keys", req: base(map[string]any{"user": awkward, "zz": 1e21, "aa": float32(0.1), "f": 1e-7, "big": 1e300,
			"n": nil, "t": true, "i8": int8(-3), "u": uint64(math.MaxUint64), "i64": int64(math.MinInt64), "b": []byte("x<\n"),
			"raw": json.RawMessage(`[1, {"a" : "<\u2028>"}]`), "map": map[string]any{"x": 1e21, "y": []any{1e-7, "é"}}})},
		{name: "key order", req: base(map[string]any{"Z": 1, "a": 2, "a-b": 3, "_x": 4, "b9": 5, "thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}})},
		{name: "override standard fields", req: base(map[string]any{"model": "other", "messages": []any{}, "stream": false,
			"system": "plain", "max_tokens": 5.5, "tool_choice": map[string]any{"type": "none"}})},
		{name: "override set params", req: Request{Model: "m", Messages: agentLoop, Tools: bodyTools, Params: Params{
			Temperature: ptr(0.1), TopP: ptr(0.2), TopK: ptr(3), MaxTokens: ptr(9), Stop: []string{"x"}, ToolChoice: "auto",
			Extra: map[string]any{"temperature": 1, "top_p": "x", "top_k": nil, "max_tokens": int64(2), "stop_sequences": []string{"<"}, "tool_choice": "none"}}}},
		{name: "override unset params", req: base(map[string]any{"temperature": 0.5, "top_k": 1, "top_p": 2, "stop_sequences": nil})},
		{name: "override absent messages, model and system", req: bare(Params{Extra: map[string]any{"messages": []any{"x"}, "model": "y", "system": "z"}})},
		{name: "tool choice extra without tools", req: bare(Params{Extra: map[string]any{"tool_choice": "auto"}})},
		{name: "extra tools without tools", req: bare(Params{Extra: map[string]any{"tools": []any{map[string]any{"type": "custom"}}}})},
		{name: "extra tools with tools", req: base(map[string]any{"tools": []any{}}), sdk: true},
		{name: "extra tools with an invalid tool", req: Request{Tools: []Tool{{Name: "x", InputSchema: json.RawMessage(`[1]`)}},
			Params: Params{Extra: map[string]any{"tools": nil}}}, sdk: true},
		{name: "path key", req: base(map[string]any{"a.b": 1}), sdk: true},
		{name: "empty key", req: base(map[string]any{"": 1}), sdk: true},
		{name: "awkward key", req: base(map[string]any{awkward: 1, "<": 2, "0": 3}), sdk: true},
		{name: "omit", req: base(map[string]any{"temperature": param.Omit, "model": param.Omit}), sdk: true},
		{name: "nan extra", req: base(map[string]any{"x": math.NaN()}), sdk: true},
		{name: "inf extra", req: base(map[string]any{"x": float32(math.Inf(-1))}), sdk: true},
		{name: "nan in map", req: base(map[string]any{"x": map[string]any{"y": math.NaN()}}), sdk: true},
		{name: "invalid raw", req: base(map[string]any{"x": json.RawMessage(`{`)}), sdk: true},
		{name: "unencodable", req: base(map[string]any{"x": func() {}}), sdk: true},
		{name: "nan temperature", req: Request{Model: "m", Params: Params{Temperature: ptr(math.NaN())}}, sdk: true},
		{name: "inf top_p", req: Request{Model: "m", Params: Params{TopP: ptr(math.Inf(1))}}, sdk: true},
		{name: "invalid tool schema", req: Request{Model: "m", Tools: []Tool{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}}},
	}
}

// TestAnthropicBodyMatchesSDK compares the direct encoder with the SDK
// path, the definition of the body.
func TestAnthropicBodyMatchesSDK(t *testing.T) {
	cases := append(anthropicMessageCases(), anthropicParamCases()...)
	cases = append(cases, anthropicExtraCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if direct := checkAnthropicBody(t, tc.req); direct == tc.sdk {
				t.Errorf("direct = %v, want %v", direct, !tc.sdk)
			}
		})
	}
}

// checkAnthropicBody fails t unless anthropicBody gives req the SDK path's
// body or error, and reports whether it wrote the body itself. It may leave
// a request to the SDK only if anthropicDirect says so, the SDK refuses it
// or an extra field is param.Omit. The bodies are compared byte for byte,
// except that the members the SDK appends in map order (see anthropicBody)
// are compared as a set.
func checkAnthropicBody(t *testing.T, req Request) (direct bool) {
	t.Helper()
	want, wantErr := anthropicBodySDK(req, newToolJSON(encodeAnthropicTool))
	got, direct, err := anthropicBodyDirect(req, newToolJSON(encodeAnthropicTool))
	if !direct {
		if anthropicDirect(req) && wantErr == nil && !slices.Contains(slices.Collect(maps.Values(req.Params.Extra)), any(param.Omit)) {
			t.Fatalf("left to the SDK path, which encodes it:\n%s", want)
		}
		got, err = anthropicBody(req, newToolJSON(encodeAnthropicTool))
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if wantErr != nil {
		return direct
	}
	own, tools := sdkOwnMembers(t, req, want)
	g, w := sortAppended(t, got, own, tools), sortAppended(t, want, own, tools)
	if !bytes.Equal(g, w) {
		t.Fatalf("body differs from the SDK's at byte %d (appended members sorted)\n got %q\nwant %q", diffAt(g, w), got, want)
	}
	return direct
}

// sdkOwnMembers returns how many members lead want that belong to the SDK
// types (the extra fields of the same names replace them in place), and
// whether want ends with a tools member added by toolJSON.appendTools.
func sdkOwnMembers(t *testing.T, req Request, want []byte) (own int, tools bool) {
	t.Helper()
	params, _, err := anthropicParams(req)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	for _, m := range bodyMembers(t, plain) {
		fields[m.key] = true
	}
	for _, m := range bodyMembers(t, want) {
		if !fields[m.key] {
			break
		}
		own++
	}
	_, extraTools := req.Params.Extra["tools"]
	return own, !extraTools && len(req.Tools) > 0
}

type bodyMember struct {
	key string
	raw []byte // "key":value as encoded
}

// bodyMembers splits a compact JSON object into its members.
func bodyMembers(t *testing.T, body []byte) []bodyMember {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("%v: %q", err, body)
	}
	var members []bodyMember
	for dec.More() {
		start := dec.InputOffset()
		key, err := dec.Token()
		var v json.RawMessage
		if err == nil {
			err = dec.Decode(&v)
		}
		if err != nil {
			t.Fatalf("%v: %q", err, body)
		}
		raw := bytes.TrimPrefix(body[start:dec.InputOffset()], []byte(","))
		members = append(members, bodyMember{key: key.(string), raw: raw})
	}
	return members
}

// sortAppended returns body with the members after the first own ones (and
// before a trailing tools member) sorted.
func sortAppended(t *testing.T, body []byte, own int, tools bool) []byte {
	t.Helper()
	members := bodyMembers(t, body)
	end := len(members)
	if tools {
		end--
	}
	if own > end {
		t.Fatalf("%d own members and tools in %d members: %q", own, len(members), body)
	}
	slices.SortFunc(members[own:end], func(a, b bodyMember) int { return bytes.Compare(a.raw, b.raw) })
	out := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.raw...)
	}
	return append(out, '}')
}

// The appended members come sorted by key, whatever the map order.
func TestAnthropicBodyExtraOrder(t *testing.T) {
	req := Request{Model: "m", Tools: bodyTools, Params: Params{ToolChoice: "auto", Extra: map[string]any{"b": 1, "a": 2, "z": 3, "model": "x"}}}
	body, err := anthropicBody(req, newToolJSON(encodeAnthropicTool))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range bodyMembers(t, body) {
		keys = append(keys, m.key)
	}
	want := []string{"max_tokens", "model", "a", "b", "stream", "tool_choice", "z", "tools"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys = %q, want %q", keys, want)
	}
}

// FuzzAnthropicBody builds requests from fuzzed strings and numbers, each
// bit of shape switching one part on, and compares the two encoders.
func FuzzAnthropicBody(f *testing.F) {
	f.Add("sys", "hi <b>&\u2028", `{"a":1}`, "call_1", "image/png", "user", 0.7, int64(42), []byte{1, 2, 3}, ^uint32(0))
	f.Add("", awkward, "", "", "", "temperature", 1e-7, int64(math.MaxInt64), []byte(nil), uint32(0x0f0f0f0f))
	f.Add("s", "x", " {\n\t\"k\" :\r\n [ \"<\u2028>\" ] } ", "id", "", "max_tokens", 1e21, int64(-1), []byte("x"), uint32(0xf0f0f0f0))
	f.Add("", "", "", "", "", "", 0.0, int64(0), []byte(nil), uint32(0x00ff83ff))
	f.Fuzz(func(t *testing.T, system, text, args, id, mime, key string, num float64, n int64, data []byte, shape uint32) {
		checkAnthropicBody(t, fuzzAnthropicRequest(system, text, args, id, mime, key, num, n, data, shape))
	})
}

func fuzzAnthropicRequest(system, text, args, id, mime, key string, num float64, n int64, data []byte, shape uint32) Request {
	on := func(bit int) bool { return shape&(1<<bit) != 0 }
	req := Request{Model: text}
	if on(0) {
		req.System = system
	}
	images := []Image{{MIMEType: mime, Data: data}}
	add := func(bit int, m Message) {
		if on(bit) {
			req.Messages = append(req.Messages, m)
		}
	}
	add(1, Message{Role: RoleUser, Text: text})
	add(2, Message{Role: RoleUser, Text: system, Images: images})
	add(3, Message{Role: RoleAssistant, Text: text})
	add(4, Message{Role: RoleAssistant, Text: system, ToolCalls: []ToolCall{{ID: id, Name: key, Arguments: json.RawMessage(args)}}})
	add(5, Message{Role: RoleTool, ToolCallID: id, Text: text, IsError: on(6)})
	add(7, Message{Role: RoleTool, ToolCallID: key, Text: args, Images: images})
	add(8, Message{Role: Role(key), Text: text})
	add(9, Message{Role: RoleTool, ToolCallID: id, Images: images, IsError: on(10)})
	p := &req.Params
	set := func(bit int, f func()) {
		if on(bit) {
			f()
		}
	}
	set(11, func() { p.Temperature, p.TopP = &num, ptr(-num) })
	set(12, func() { p.MaxTokens, p.TopK = ptr(int(n)), ptr(int(n>>8)) })
	set(13, func() { p.Stop = []string{text, key} })
	set(14, func() { p.Stop = []string{} })
	set(15, func() { p.ToolChoice = fuzzValue(shape>>24, text, args, num, n, data) })
	set(16, func() { p.ToolChoice = text })
	set(17, func() { req.Tools = bodyTools })
	set(18, func() { req.Tools = []Tool{{Name: key, Description: text, InputSchema: json.RawMessage(args)}} })
	set(19, func() {
		p.Extra = map[string]any{fuzzAnthropicKey(shape>>20, key): fuzzValue(shape>>24, text, args, num, n, data)}
	})
	set(20, func() {
		p.Extra = map[string]any{fuzzAnthropicKey(shape>>22, key): num, fuzzAnthropicKey(shape>>26, text): n, "stream": on(21)}
	})
	return req
}

// fuzzAnthropicKey picks a key the SDK's fields or extra fields use, or key.
func fuzzAnthropicKey(sel uint32, key string) string {
	keys := []string{"model", "messages", "system", "temperature", "top_p", "top_k", "max_tokens", "stop_sequences",
		"stream", "tool_choice", "tools", "metadata", "a-b", "_"}
	if int(sel%16) < len(keys) {
		return keys[sel%16]
	}
	return strings.TrimSpace(key)
}

// BenchmarkAnthropicBody encodes an agent loop's second request (system
// prompt, question, tool call, tool result) with one and with 21 tools,
// their definitions already cached.
func BenchmarkAnthropicBody(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path."},` +
		`"limit":{"type":"integer","minimum":1}},"required":["path"]}`)
	var tools []Tool
	for i := range 21 {
		tools = append(tools, Tool{Name: fmt.Sprintf("fs__tool_%d", i), Description: "Reads a file and returns its contents as text.", InputSchema: schema})
	}
	req := Request{Model: "claude-sonnet-4-5", System: "You are a helpful assistant. Use the tools when they help.",
		Messages: agentLoop, Params: Params{Temperature: ptr(0.2), MaxTokens: ptr(1024)}}
	encoders := []struct {
		name string
		body func(Request, *toolJSON) ([]byte, error)
	}{{"sdk", anthropicBodySDK}, {"direct", anthropicBody}}
	for _, enc := range encoders {
		for _, n := range []int{1, 21} {
			b.Run(fmt.Sprintf("%s/tools=%d", enc.name, n), func(b *testing.B) {
				r := req
				r.Tools = tools[:n]
				cache := newToolJSON(encodeAnthropicTool)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := enc.body(r, cache); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
