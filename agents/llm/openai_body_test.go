package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
)

// awkward holds every kind of character a JSON encoder may treat specially.
const awkward = "q\"b\\s/ c\x00\x01\x1f\x7f\b\f\n\r\t <>& \u2028\u2029 bad\xff\xe2\x80 sur\xed\xa0\x80 é 😀 \ufffd"

var bodyTools = []Tool{
	{Name: "srv__echo", Description: "Echoes <text> & more.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	{Name: "bare"},
}

// agentLoop is the conversation of one tool round trip.
var agentLoop = []Message{
	{Role: RoleUser, Text: "What's the weather in Paris?"},
	{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "weather__get", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: RoleTool, ToolCallID: "call_1", Text: `{"temp":21,"sky":"clear"}`},
}

func ptr[T any](v T) *T { return &v }

func img(mime string) Image { return Image{MIMEType: mime, Data: []byte("\x89PNG\r\n\x1a\n\x00\xff")} }

// openAIBodyCase is one request with the path openAIBody must take for it.
type openAIBodyCase struct {
	name string
	req  Request
	sdk  bool // left to the SDK path
}

func openAIMessageCases() []openAIBodyCase {
	user := func(m ...Message) Request { return Request{Model: "m", Messages: m} }
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
	return []openAIBodyCase{
		{name: "empty request"},
		{name: "model only", req: Request{Model: "gpt-4o"}},
		{name: "system only", req: Request{System: "be brief"}},
		{name: "agent loop", req: Request{Model: "m", System: "be brief", Messages: agentLoop, Tools: bodyTools}},
		{name: "awkward strings", req: Request{Model: awkward, System: awkward, Messages: []Message{
			{Role: RoleUser, Text: awkward}, calls(`{"k":"` + awkward + `"}`), result("c0"+awkward, awkward, true, img(awkward))}}},
		{name: "empty user text", req: user(Message{Role: RoleUser})},
		{name: "system turn only", req: user(Message{Role: RoleSystem, Text: "x"})},
		{name: "unknown role only", req: user(Message{Role: "developer", Text: "x"})},
		{name: "system turns in a replayed history", req: Request{Model: "m", System: "be brief", Messages: append([]Message{
			{Role: RoleSystem, Text: "answer in French"}}, append(agentLoop, Message{Role: RoleSystem, Text: awkward})...)}},
		{name: "user images", req: user(Message{Role: RoleUser, Images: []Image{img("image/png"), img("image/jpeg"), img(""), img("image/svg+xml"), {}}})},
		{name: "user text and image", req: user(Message{Role: RoleUser, Text: "look", Images: []Image{img("image/webp")}})},
		{name: "assistant text", req: user(Message{Role: RoleAssistant, Text: "sure"})},
		{name: "assistant empty", req: user(Message{Role: RoleAssistant})},
		{name: "assistant empty arguments", req: user(calls("", "null", "{}", " "))},
		{name: "assistant html arguments", req: user(calls(`{"q":"<a href=\"x\">&amp;</a>","u":"é😀`+"\u2028"+`"}`, `{"n":1e400,"bad":"`+"\xff"+`"}`, "not json"))},
		{name: "assistant text and calls", req: user(Message{Role: RoleAssistant, Text: "calling", ToolCalls: []ToolCall{{ID: "a", Name: "x", Arguments: json.RawMessage(`{"a":[1,2]}`)}}})},
		{name: "tool results", req: user(calls("{}", "{}"), result("c0", "ok", false), result("c1", "boom", true))},
		{name: "empty tool results", req: user(result("a", "", false), result("b", "", true), result("c", "", false, img("image/png")))},
		{name: "tool result images", req: user(calls("{}"), result("c0", "see", false, img("image/png"), img("")), Message{Role: RoleUser, Text: "next"})},
		{name: "run with images", req: user(calls("{}", "{}", "{}"), result("c0", "a", false, img("image/gif")), result("c1", "b", true),
			result("c2", "", true, img("image/png"), img("image/jpeg")))},
		{name: "two runs", req: user(calls("{}"), result("c0", "a", false, img("image/png")), calls("{}"), result("c0", "b", false, img("")))},
		{name: "unknown role ends run", req: user(result("a", "x", false, img("image/png")), Message{Role: "other"}, result("b", "y", false, img("image/png")))},
	}
}

func openAIParamCases() []openAIBodyCase {
	base := func(p Params) Request {
		return Request{Model: "m", System: "s", Messages: agentLoop, Tools: bodyTools, Params: p}
	}
	noTools := func(p Params) Request { r := base(p); r.Tools = nil; return r }
	var cases []openAIBodyCase
	for _, f := range []float64{0, 0.7, 1, 2, 1e-7, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64, math.Copysign(0, -1), -0.5} {
		cases = append(cases, openAIBodyCase{name: fmt.Sprint("floats ", f), req: base(Params{
			Temperature: ptr(f), TopP: ptr(f), PresencePenalty: ptr(f), FrequencyPenalty: ptr(-f)})})
	}
	for _, n := range []int{0, 1, 40, 1000, math.MaxInt, math.MinInt} {
		cases = append(cases, openAIBodyCase{name: fmt.Sprint("ints ", n), req: base(Params{MaxTokens: ptr(n), Seed: ptr(n), TopK: ptr(n)})})
	}
	return append(cases, []openAIBodyCase{
		{name: "no params", req: base(Params{})},
		{name: "all params", req: base(Params{Temperature: ptr(0.2), TopP: ptr(0.9), TopK: ptr(40), MaxTokens: ptr(512),
			Stop: []string{"END", awkward}, PresencePenalty: ptr(0.1), FrequencyPenalty: ptr(0.3), Seed: ptr(7),
			ResponseFormat: map[string]any{"type": "json_object"}, ToolChoice: "auto", Extra: map[string]any{"user": "u"}})},
		{name: "one stop", req: base(Params{Stop: []string{"\n"}})},
		{name: "empty stop", req: base(Params{Stop: []string{}})},
		{name: "raw response format", req: base(Params{ResponseFormat: json.RawMessage(` { "type" : "json_schema", "s": "<x>", "n": 1e2 } `)})},
		{name: "string response format", req: base(Params{ResponseFormat: "json_object"})},
		{name: "tool choice object", req: base(Params{ToolChoice: map[string]any{"type": "function", "function": map[string]any{"name": "bare"}}})},
		{name: "tool choice raw", req: base(Params{ToolChoice: json.RawMessage(`"required"`)})},
		{name: "tool choice without tools", req: noTools(Params{ToolChoice: "required"})},
		{name: "typed nil response format", req: base(Params{ResponseFormat: (*int)(nil)})},
	}...)
}

func openAIExtraCases() []openAIBodyCase {
	base := func(extra map[string]any) Request {
		return Request{Model: "m", System: "s", Messages: agentLoop, Tools: bodyTools, Params: Params{Extra: extra}}
	}
	bare := func(p Params) Request { return Request{Params: p} }
	return []openAIBodyCase{
		{name: "new keys", req: base(map[string]any{"user": awkward, "zz": 1e21, "aa": float32(0.1), "f": 1e-7, "big": 1e300,
			"n": nil, "t": true, "i8": int8(-3), "u": uint64(math.MaxUint64), "i64": int64(math.MinInt64), "b": []byte("x<\n"),
			"raw": json.RawMessage(`[1, {"a" : "<\u2028>"}]`), "map": map[string]any{"x": 1e21, "y": []any{1e-7, "é"}}})},
		{name: "key order", req: base(map[string]any{"Z": 1, "a": 2, "k\"q": 3, "<": 4, "\u2028": 5, "é": 6, "0": 7, "-1": 8, " ": 9, "\x00": 10, "\xff": 11})},
		{name: "override standard fields", req: base(map[string]any{"model": "other", "messages": []any{}, "stream": false,
			"stream_options": nil, "stop": "x", "max_tokens": 5.5})},
		{name: "override set params", req: Request{Model: "m", Messages: agentLoop, Tools: bodyTools, Params: Params{
			Temperature: ptr(0.1), TopP: ptr(0.2), TopK: ptr(3), Seed: ptr(1), ResponseFormat: "text", ToolChoice: "auto",
			Extra: map[string]any{"temperature": 1, "top_p": "x", "top_k": nil, "seed": 2.5, "response_format": 1, "tool_choice": "none"}}}},
		{name: "override unset params", req: base(map[string]any{"temperature": 0.5, "frequency_penalty": 1, "presence_penalty": 2, "seed": 3})},
		{name: "override absent messages and model", req: bare(Params{Extra: map[string]any{"messages": []any{"x"}, "model": "y"}})},
		{name: "tool choice extra without tools", req: bare(Params{Extra: map[string]any{"tool_choice": "auto"}})},
		{name: "extra tools without tools", req: bare(Params{Extra: map[string]any{"tools": []any{map[string]any{"type": "function"}}}})},
		{name: "extra tools with tools", req: base(map[string]any{"tools": []any{}}), sdk: true},
		{name: "path key", req: base(map[string]any{"a.b": 1}), sdk: true},
		{name: "empty key", req: base(map[string]any{"": 1}), sdk: true},
		{name: "pipe key", req: base(map[string]any{"x|y": 1}), sdk: true},
		{name: "omit", req: base(map[string]any{"temperature": param.Omit}), sdk: true},
		{name: "nan extra", req: base(map[string]any{"x": math.NaN()}), sdk: true},
		{name: "inf extra", req: base(map[string]any{"x": float32(math.Inf(-1))}), sdk: true},
		{name: "nan in map", req: base(map[string]any{"x": map[string]any{"y": math.NaN()}}), sdk: true},
		{name: "invalid raw", req: base(map[string]any{"x": json.RawMessage(`{`)}), sdk: true},
		{name: "unencodable", req: base(map[string]any{"x": func() {}}), sdk: true},
		{name: "nan temperature", req: Request{Model: "m", Params: Params{Temperature: ptr(math.NaN())}}, sdk: true},
		{name: "invalid tool schema", req: Request{Model: "m", Tools: []Tool{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}}},
	}
}

// TestOpenAIBodyMatchesSDK compares the direct encoder with the SDK path,
// the definition of the body, byte for byte.
func TestOpenAIBodyMatchesSDK(t *testing.T) {
	cases := append(openAIMessageCases(), openAIParamCases()...)
	cases = append(cases, openAIExtraCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if direct := checkOpenAIBody(t, tc.req); direct == tc.sdk {
				t.Errorf("direct = %v, want %v", direct, !tc.sdk)
			}
		})
	}
}

// checkOpenAIBody fails t unless openAIBody gives req the SDK path's body or
// error, and reports whether it wrote the body itself. It may leave a
// request to the SDK only if openAIDirect says so, the SDK refuses it or an
// extra field is param.Omit.
func checkOpenAIBody(t *testing.T, req Request) (direct bool) {
	t.Helper()
	want, wantErr := openAIBodySDK(req, newToolJSON(encodeOpenAITool))
	got, direct, err := openAIBodyDirect(req, newToolJSON(encodeOpenAITool))
	if !direct {
		if openAIDirect(req) && wantErr == nil && !slices.Contains(slices.Collect(maps.Values(req.Params.Extra)), any(param.Omit)) {
			t.Fatalf("left to the SDK path, which encodes it:\n%s", want)
		}
		got, err = openAIBody(req, newToolJSON(encodeOpenAITool))
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if string(got) != string(want) {
		t.Fatalf("body differs from the SDK's at byte %d\n got %q\nwant %q", diffAt(got, want), got, want)
	}
	return direct
}

func diffAt(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// FuzzOpenAIBody builds requests from fuzzed strings and numbers, each bit
// of shape switching one part on, and compares the two encoders.
func FuzzOpenAIBody(f *testing.F) {
	f.Add("sys", "hi <b>&\u2028", `{"a":1}`, "call_1", "image/png", "user", 0.7, int64(42), []byte{1, 2, 3}, ^uint32(0))
	f.Add("", awkward, "", "", "", "temperature", 1e-7, int64(math.MaxInt64), []byte(nil), uint32(0x0f0f0f0f))
	f.Add("s", "x", "null", "id", "", "model", 1e21, int64(-1), []byte("x"), uint32(0xf0f0f0f0))
	f.Fuzz(func(t *testing.T, system, text, args, id, mime, key string, num float64, n int64, data []byte, shape uint32) {
		checkOpenAIBody(t, fuzzOpenAIRequest(system, text, args, id, mime, key, num, n, data, shape))
	})
}

func fuzzOpenAIRequest(system, text, args, id, mime, key string, num float64, n int64, data []byte, shape uint32) Request {
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
	set(12, func() { p.PresencePenalty, p.FrequencyPenalty = &num, ptr(num/3) })
	set(13, func() { p.MaxTokens, p.Seed, p.TopK = ptr(int(n)), ptr(int(-n)), ptr(int(n>>8)) })
	set(14, func() { p.Stop = []string{text, key} })
	set(15, func() { p.ResponseFormat = fuzzValue(shape>>24, text, args, num, n, data) })
	set(16, func() { p.ToolChoice = text })
	set(17, func() { req.Tools = bodyTools })
	set(18, func() { req.Tools = []Tool{{Name: key, Description: text, InputSchema: json.RawMessage(args)}} })
	set(19, func() {
		p.Extra = map[string]any{fuzzKey(shape>>20, key): fuzzValue(shape>>24, text, args, num, n, data)}
	})
	set(20, func() { p.Extra = map[string]any{key: num, text: n, "stream": on(21)} })
	return req
}

// fuzzKey picks a key the SDK's fields or extra fields use, or key.
func fuzzKey(sel uint32, key string) string {
	keys := []string{"model", "messages", "temperature", "top_p", "max_tokens", "seed", "stop", "stream",
		"stream_options", "top_k", "response_format", "tool_choice", "tools", "presence_penalty", "zzz"}
	if int(sel%32) < len(keys) {
		return keys[sel%32]
	}
	return key
}

// fuzzValue picks an extra field's value of one of the types the SDK's merge
// tells apart.
func fuzzValue(sel uint32, text, args string, num float64, n int64, data []byte) any {
	switch sel % 12 {
	case 0:
		return text
	case 1:
		return num
	case 2:
		return float32(num)
	case 3:
		return int(n)
	case 4:
		return n%2 == 0
	case 5:
		return nil
	case 6:
		return map[string]any{text: num, "n": n}
	case 7:
		return []any{text, num, nil}
	case 8:
		return json.RawMessage(args)
	case 9:
		return data
	case 10:
		return uint16(n)
	}
	return strings.Repeat(text, 2)
}

// BenchmarkOpenAIBody encodes an agent loop's second request (system
// prompt, question, tool call, tool result) with one and with 21 tools,
// their definitions already cached.
func BenchmarkOpenAIBody(b *testing.B) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path."},` +
		`"limit":{"type":"integer","minimum":1}},"required":["path"]}`)
	var tools []Tool
	for i := range 21 {
		tools = append(tools, Tool{Name: fmt.Sprintf("fs__tool_%d", i), Description: "Reads a file and returns its contents as text.", InputSchema: schema})
	}
	req := Request{Model: "gpt-4o-mini", System: "You are a helpful assistant. Use the tools when they help.",
		Messages: agentLoop, Params: Params{Temperature: ptr(0.2), MaxTokens: ptr(1024)}}
	encoders := []struct {
		name string
		body func(Request, *toolJSON) ([]byte, error)
	}{{"sdk", openAIBodySDK}, {"direct", openAIBody}}
	for _, enc := range encoders {
		for _, n := range []int{1, 21} {
			b.Run(fmt.Sprintf("%s/tools=%d", enc.name, n), func(b *testing.B) {
				r := req
				r.Tools = tools[:n]
				cache := newToolJSON(encodeOpenAITool)
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
