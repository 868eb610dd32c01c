package llm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// sseResp is a 200 answer streaming body.
func sseResp(body io.Reader) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(body)}
}

// sse builds an SSE body from data payloads.
func sse(datas ...string) string {
	var b strings.Builder
	for _, d := range datas {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

func TestOpenAIAccumulator(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantCalls []ToolCall
		wantText  string
		finish    string
		usage     Usage
		wantErr   string
	}{
		{
			name: "index-less deltas, ids start calls (Ollama)",
			body: sse(`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"delta":{},"finish_reason":"stop"}]}`, `[DONE]`),
			wantCalls: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{"x":1}`)}, {ID: "b", Name: "g", Arguments: json.RawMessage(`{}`)}},
			finish:    "tool_calls", // "stop" with calls is normalised
		},
		{
			name: "same index reused with a new id",
			body: sse(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
				`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`),
			wantCalls: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`{}`)}, {ID: "b", Name: "g", Arguments: json.RawMessage(`{}`)}},
			finish:    "tool_calls",
		},
		{
			name: "repeated name, object arguments, missing id",
			body: sse(`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":{"k":"v"}}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`,
				`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`),
			wantCalls: []ToolCall{{ID: "call_0", Name: "f", Arguments: json.RawMessage(`{"k":"v"}`)}},
			finish:    "tool_calls",
		},
		{
			name:      "invalid arguments become a JSON string",
			body:      sse(`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{oops"}}]},"finish_reason":"tool_calls"}]}`),
			wantCalls: []ToolCall{{ID: "a", Name: "f", Arguments: json.RawMessage(`"{oops"`)}},
			finish:    "tool_calls",
		},
		{
			name: "usage is the maximum, not the sum",
			body: sse(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
				`{"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
				`{"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`),
			wantText: "ab", finish: "length", usage: Usage{InputTokens: 5, OutputTokens: 3},
		},
		{
			name:     "comments, CRLF, null error, no space after data:",
			body:     ": ping\r\n\r\ndata:{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\r\n\r\n: x\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"error\":null}\r\n\r\ndata: [DONE]\r\n\r\n",
			wantText: "hi", finish: "stop",
		},
		{
			name:     "second choice ignored, unknown finish kept",
			body:     sse(`{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"content_filter"}]}`),
			wantText: "yes", finish: "content_filter",
		},
		{name: "no finish reason", body: sse(`{"choices":[{"delta":{"content":"x"}}]}`, `[DONE]`), wantErr: "stream ended without finish_reason"},
		{name: "empty body", body: "", wantErr: "stream ended without finish_reason"},
		{name: "error object", body: sse(`{"error":{"message":"boom","code":500}}`), wantErr: "stream error: boom"},
		{name: "error string", body: sse(`{"error":"bad thing"}`), wantErr: "stream error: bad thing"},
		{name: "not JSON", body: sse(`{"choices":`), wantErr: "malformed stream chunk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := readOpenAIStream(sseResp(strings.NewReader(tc.body)), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			checkResponse(t, resp, tc.wantText, tc.finish, tc.usage, tc.wantCalls)
		})
	}
}

func checkResponse(t *testing.T, resp *Response, text, finish string, usage Usage, calls []ToolCall) {
	t.Helper()
	if resp.Text != text || resp.FinishReason != finish || resp.Usage != usage {
		t.Errorf("resp = %+v, want text %q finish %q usage %+v", resp, text, finish, usage)
	}
	if len(resp.ToolCalls) != len(calls) {
		t.Fatalf("calls = %+v, want %+v", resp.ToolCalls, calls)
	}
	for i, c := range calls {
		got := resp.ToolCalls[i]
		if got.ID != c.ID || got.Name != c.Name || string(got.Arguments) != string(c.Arguments) {
			t.Errorf("call %d = %+v (%s), want %+v (%s)", i, got, got.Arguments, c, c.Arguments)
		}
	}
}

func TestAnthropicAccumulator(t *testing.T) {
	body := "event: message_start\n" + sse(`{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}`) +
		sse(`{"type":"ping"}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu1","name":"f","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": [1,"}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" 2]}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tu2","name":"g","input":{"pre":true}}}`,
			`{"type":"content_block_stop","index":2}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}`,
			`{"type":"message_delta","delta":{},"usage":{"output_tokens":25}}`,
			`{"type":"some_future_event"}`,
			`{"type":"message_stop"}`)
	var deltas []string
	resp, err := readAnthropicStream(sseResp(strings.NewReader(body)), func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deltas) != "[Let me  check.]" {
		t.Errorf("text deltas %q, want the two text deltas and none of the tool input", deltas)
	}
	checkResponse(t, resp, "Let me check.", "tool_calls", Usage{InputTokens: 9, OutputTokens: 25}, []ToolCall{
		{ID: "tu1", Name: "f", Arguments: json.RawMessage(`{"a": [1, 2]}`)},
		{ID: "tu2", Name: "g", Arguments: json.RawMessage(`{"pre":true}`)},
	})
}

// FuzzOpenAIStream feeds arbitrary bodies to the event decoder and accumulator:
// they must never panic, and a success must carry valid JSON arguments.
func FuzzOpenAIStream(f *testing.F) {
	f.Add(sse(`{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}`, `[DONE]`))
	f.Add(sse(`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"id":"x","index":-1}]},"finish_reason":"tool_calls"}]}`))
	f.Add(": ping\r\n\r\ndata: {\"error\":null}\r\n\r\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"function_call\":{\"name\":\"f\",\"arguments\":7}}," +
		"\"finish_reason\":\"function_call\"}],\"usage\":{\"prompt_tokens\":-1}}\n\n")
	f.Add("data: {\"error\":{\"code\":1}}\n\ndata")
	f.Add("\r\r\n\n:\ndata:\ndata:\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		resp, err := readOpenAIStream(sseResp(strings.NewReader(body)), nil)
		if err != nil {
			return
		}
		for _, c := range resp.ToolCalls {
			if !json.Valid(c.Arguments) {
				t.Fatalf("invalid arguments %q", c.Arguments)
			}
		}
		_, _ = readAnthropicStream(sseResp(strings.NewReader(body)), nil)
	})
}

// anSSE builds a Messages SSE body from data payloads, each preceded by
// the "event:" line Anthropic sends (the accumulator reads the type from
// the JSON, so the line is only realism).
func anSSE(datas ...string) string {
	var b strings.Builder
	for _, d := range datas {
		var ev struct{ Type string }
		if json.Unmarshal([]byte(d), &ev) == nil && ev.Type != "" {
			b.WriteString("event: " + ev.Type + "\n")
		}
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

// FuzzAnthropicStream is FuzzOpenAIStream for the Messages stream: the event
// decoder and accumulator must never panic, and a success must carry valid
// JSON arguments (a truncated or broken input becomes a JSON string), a
// finish reason and no negative usage.
func FuzzAnthropicStream(f *testing.F) {
	const (
		start     = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`
		ping      = `{"type": "ping"}`
		textStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
		toolStart = `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`
		stop0     = `{"type":"content_block_stop","index":0}`
		stop1     = `{"type":"content_block_stop","index":1}`
		msgStop   = `{"type":"message_stop"}`
	)
	textDelta := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(b) + `}}`
	}
	jsonDelta := func(i int, s string) string {
		b, _ := json.Marshal(s)
		return `{"type":"content_block_delta","index":` + strconv.Itoa(i) +
			`,"delta":{"type":"input_json_delta","partial_json":` + string(b) + `}}`
	}
	msgDelta := func(reason string, out int) string {
		return `{"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},"usage":{"output_tokens":` +
			strconv.Itoa(out) + `}}`
	}
	// Text, then a tool call whose input is cut inside a key, an escape
	// and a number.
	f.Add(anSSE(start, ping, textStart, textDelta("Let me "), textDelta("check."), stop0, toolStart,
		jsonDelta(1, ""), jsonDelta(1, `{"loc`), jsonDelta(1, `ation": "S\u00`), jsonDelta(1, `e9o Pau`),
		jsonDelta(1, `lo", "days": 1`), jsonDelta(1, `2}`), stop1, msgDelta("tool_use", 8), msgStop))
	// max_tokens cut the tool input short: invalid JSON must not pass through.
	f.Add(anSSE(start, toolStart, jsonDelta(1, `{"location": "San Fra`), stop1, msgDelta("max_tokens", 9), msgStop))
	// A tool call with neither input nor deltas, and one with input only at
	// block start and white space deltas.
	f.Add(anSSE(start, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t0","name":"f"}}`, stop0,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"g","input":{"pre":[1,2]}}}`,
		jsonDelta(1, " "), jsonDelta(1, "\n"), stop1, msgDelta("tool_use", 3), msgStop))
	// Thinking block, deltas for an unknown index, a reused index.
	f.Add(anSSE(start, `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`, stop0,
		jsonDelta(7, `{"x":1}`), toolStart, jsonDelta(1, `{"a":`), toolStart, jsonDelta(1, `true}`),
		msgDelta("end_turn", 4), `{"type":"message_delta","delta":{},"usage":{"input_tokens":-3,"output_tokens":2}}`, msgStop))
	// Cut cleanly between events, before any stop reason.
	f.Add(anSSE(start, textStart, textDelta("half"), stop0))
	// Overloaded error mid-stream.
	f.Add(anSSE(start, ping, textStart, textDelta("par"), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	// No message_stop: the stop reason is enough.
	f.Add(anSSE(start, textStart, textDelta("done"), stop0, msgDelta("stop_sequence", 5)))
	// Events after message_stop are not read.
	f.Add(anSSE(start, msgDelta("end_turn", 1), msgStop, toolStart, jsonDelta(1, "{"), `{"type":"error","error":"late"}`))
	// Truncated in the middle of an event, CRLF, comments.
	f.Add(": hi\r\nevent: message_start\r\ndata: " + start + "\r\n\r\ndata: " + toolStart + "\r\n\r\ndata: " + msgDelta("tool_use", 2) +
		"\r\n\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"partial_json\":\"{\\\"a")
	f.Add("event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"")
	f.Add("data: {\"type\":\"error\",\"error\":null}\n\ndata")
	f.Fuzz(func(t *testing.T, body string) {
		resp, err := readAnthropicStream(sseResp(strings.NewReader(body)), nil)
		if err != nil {
			return
		}
		if resp.FinishReason == "" {
			t.Fatalf("success without finish reason: %+v", resp)
		}
		if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 {
			t.Fatalf("negative usage %+v", resp.Usage)
		}
		for _, c := range resp.ToolCalls {
			if !json.Valid(c.Arguments) {
				t.Fatalf("invalid arguments %q", c.Arguments)
			}
		}
	})
}

func TestOpenAIBodyContentTypes(t *testing.T) {
	tests := []struct {
		name, ct, body string
		wantText       string
		wantCalls      int
		wantErr        string
	}{
		{"stream ignored: one JSON completion", "application/json",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
				`{"type":"function","function":{"name":"a","arguments":"{}"}},` +
				`{"type":"function","function":{"name":"b","arguments":"{\"k\":1}"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":3,"completion_tokens":4}}`, "", 2, ""},
		{"JSON text answer", "application/json; charset=utf-8",
			`{"choices":[{"message":{"content":"whole"},"finish_reason":"stop"}]}`, "whole", 0, ""},
		{"JSON error with 200", "application/json", `{"error":{"message":"nope"}}`, "", 0, "stream error: nope"},
		{"HTML page", "text/html; charset=utf-8", "<html>login</html>", "", 0, "HTML page"},
		{"SSE without content type", "", sse(`{"choices":[{"delta":{"content":"s"},"finish_reason":"stop"}]}`), "s", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{Header: http.Header{"Content-Type": {tc.ct}}, Body: io.NopCloser(strings.NewReader(tc.body))}
			got, err := readOpenAIBody(resp, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Text != tc.wantText || len(got.ToolCalls) != tc.wantCalls {
				t.Fatalf("resp = %+v, err = %v", got, err)
			}
		})
	}
}

// OnText gets each text delta of an OpenAI stream as it arrives, and none
// of the tool calls' arguments.
func TestOpenAITextDeltas(t *testing.T) {
	body := sse(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"lo"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
	var deltas []string
	resp, err := readOpenAIStream(sseResp(strings.NewReader(body)), func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deltas) != "[Hel lo]" || resp.Text != "Hello" {
		t.Errorf("deltas %q, text %q", deltas, resp.Text)
	}
}
