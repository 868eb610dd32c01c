package llm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decoder is one of the chunk types' two decoders: decodeFast and the one
// feed uses, which falls back on encoding/json.
type decoder[T any] struct {
	fast   func(*T, []byte) bool
	decode func([]byte) (T, error)
}

var (
	oaChunkDecoder = decoder[oaChunk]{(*oaChunk).decodeFast, decodeOAChunk}
	anEventDecoder = decoder[anEvent]{(*anEvent).decodeFast, decodeANEvent}
)

// check decodes data with json.Unmarshal (the oracle) and with both
// decoders of d. It fails when decodeFast accepted data but encoding/json
// gives an error or another value, or when the decoder feed uses differs
// from encoding/json in value or error. It reports whether decodeFast
// accepted data.
func (d decoder[T]) check(t testing.TB, data []byte) bool {
	t.Helper()
	var want, fast T
	wantErr := json.Unmarshal(data, &want)
	got, err := d.decode(data)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%q) =\n%s, %v\nencoding/json:\n%s, %v", data, dump(got), err, dump(want), wantErr)
	}
	if !d.fast(&fast, data) {
		return false
	}
	if wantErr != nil {
		t.Fatalf("decodeFast accepted %q; encoding/json: %v", data, wantErr)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("decodeFast(%q) =\n%s\nencoding/json:\n%s", data, dump(fast), dump(want))
	}
	return true
}

// dump shows a decoded value with its pointers followed.
func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// chunkCase is one chunk and whether decodeFast must take it (true) or
// must decline it (false), leaving it to encoding/json.
type chunkCase struct {
	name string
	data string
	fast bool
}

var openAIChunks = []chunkCase{
	// What the servers send.
	{"OpenAI first chunk", `{"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_abc","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`, true},
	{"OpenAI content", `{"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1726000000,"model":"gpt-4o","system_fingerprint":"fp_abc","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`, true},
	{"OpenAI tool call start", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}]}`, true},
	{"OpenAI tool call arguments", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"lo"}}]},"logprobs":null,"finish_reason":null}]}`, true},
	{"OpenAI parallel tool calls", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":null}]}`, true},
	{"OpenAI finish", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`, true},
	{"OpenAI usage only", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`, true},
	{"OpenAI logprobs", `{"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.0012,"bytes":[72,105],"top_logprobs":[]}],"refusal":null},"finish_reason":null}]}`, true},
	{"Azure prompt filter results", `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"}}}]}`, true},
	{"Azure content filter", `{"choices":[{"content_filter_results":{},"delta":{"content":"x"},"finish_reason":null,"index":0,"logprobs":null}],"created":1,"id":"c","model":"gpt-4o","object":"chat.completion.chunk","system_fingerprint":"fp"}`, true},
	{"vLLM content", `{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"Qwen/Qwen2.5-7B","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}`, true},
	{"vLLM continuous usage", `{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":10,"total_tokens":11,"completion_tokens":1}}`, true},
	{"vLLM finish with stop_reason", `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`, true},
	{"vLLM tool call", `{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-abc","type":"function","index":0,"function":{"name":"f"}}]},"logprobs":null,"finish_reason":null}]}`, true},
	{"vLLM reasoning", `{"choices":[{"index":0,"delta":{"reasoning_content":"Let me think","content":null},"finish_reason":null}]}`, true},
	{"llama.cpp content", `{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hello"}}],"created":1,"id":"chatcmpl-x","model":"gpt-3.5-turbo","system_fingerprint":"b4000-abc","object":"chat.completion.chunk"}`, true},
	{"llama.cpp final with timings", `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":5,"prompt_tokens":3,"total_tokens":8},"timings":{"prompt_n":3,"prompt_ms":1.5,"prompt_per_token_ms":0.5,"predicted_n":5,"predicted_per_second":1.2e2}}`, true},
	{"Ollama content", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama3.1","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`, true},
	{"Ollama tool call without index", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}]}`, true},
	{"LiteLLM nulls", `{"id":"c","created":1,"model":"m","object":"chat.completion.chunk","system_fingerprint":null,"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi","role":"assistant","function_call":null,"tool_calls":null,"audio":null},"logprobs":null}],"provider_specific_fields":null,"stream_options":{"include_usage":true},"citations":null}`, true},
	{"Groq x_groq", `{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"llama-3.3-70b","system_fingerprint":"fp","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"x_groq":{"id":"req_1","usage":{"queue_time":0.01,"prompt_tokens":1,"prompt_time":0.0002,"completion_tokens":2,"completion_time":0.003,"total_tokens":3,"total_time":0.0032}}}`, true},
	{"OpenRouter", `{"id":"gen-1","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","reasoning":null,"reasoning_details":[]},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"cost":0.00012,"is_byok":false}}`, true},
	{"legacy function_call", `{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{}"}},"finish_reason":"function_call"}]}`, true},
	{"whole message instead of delta", `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"type":"function","function":{"name":"g","arguments":{"b":[1,2]}}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, true},
	{"error null", `{"error":null,"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}`, true},
	{"error object", `{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`, true},
	{"error string", `{"error":"bad thing"}`, true},
	{"error number", `{"error":500}`, true},
	{"second choice", `{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"content_filter"}]}`, true},

	// What encoding/json also accepts.
	{"empty object", `{}`, true},
	{"null", `null`, true},
	{"white space everywhere", " \t\r\n{ \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"x\" } } ] , \"usage\" : { \"prompt_tokens\" : 1 } } \n", true},
	{"nulls everywhere", `{"choices":[{"index":null,"delta":null,"message":null,"finish_reason":null}],"usage":null,"error":null}`, true},
	{"nulls in deltas", `{"choices":[{"delta":{"content":null,"tool_calls":[{"index":null,"id":null,"function":null}],"function_call":null}}]}`, true},
	{"null function members", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":null,"arguments":null}}]}}]}`, true},
	{"null usage members", `{"usage":{"prompt_tokens":null,"completion_tokens":null}}`, true},
	{"choices null", `{"choices":null}`, true},
	{"empty arrays", `{"choices":[{"delta":{"tool_calls":[]}}],"usage":{}}`, true},
	{"case-variant names", `{"Choices":[{"INDEX":0,"Delta":{"Content":"x","Tool_Calls":[{"Index":0,"ID":"a","Function":{"NAME":"f","Arguments":"{}"}}]},"Finish_Reason":"stop"}],"USAGE":{"Prompt_Tokens":3,"completion_TOKENS":4},"Error":null}`, true},
	{"near-miss names", `{"choice":[],"choices_":1,"finish reason":"x","usage ":2}`, true},
	{"escapes in content", `{"choices":[{"delta":{"content":"a\"b\\c\/d\be\ff\ng\rh\ti \u00e9 \u20AC"}}]}`, true},
	{"surrogate pair", `{"choices":[{"delta":{"content":"\ud83d\ude00 ok"}}]}`, true},
	{"lone high surrogate", `{"choices":[{"delta":{"content":"a\ud83dz"}}]}`, true},
	{"lone low surrogate", `{"choices":[{"delta":{"content":"\ude00"}}]}`, true},
	{"high surrogate then non-surrogate escape", `{"choices":[{"delta":{"content":"\ud800\u0041"}}]}`, true},
	{"two high surrogates", `{"choices":[{"delta":{"content":"\ud800\ud800\udc00"}}]}`, true},
	{"raw UTF-8", `{"choices":[{"delta":{"content":"héllo 世界 😀"}}]}`, true},
	{"invalid UTF-8", "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\xe2\x80c\xed\xa0\x80\"}}]}", true},
	{"U+FFFD and U+2028", `{"choices":[{"delta":{"content":"` + "\ufffd\u2028" + `"}}]}`, true},
	{"NUL escape", `{"choices":[{"delta":{"content":"\u0000"}}]}`, true},
	{"escaped arguments kept raw", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": \"\\u00e9\"}"}}]}}]}`, true},
	{"arguments of other types", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":[1, {"a" : true}, false, -1.5e-3]}},{"function":{"arguments":7}}]}}]}`, true},
	{"negative and zero ints", `{"choices":[{"index":-0,"delta":{"tool_calls":[{"index":-1}]}}],"usage":{"prompt_tokens":-5,"completion_tokens":0}}`, true},
	{"large ints", `{"usage":{"prompt_tokens":999999999999999999,"completion_tokens":-999999999999999999}}`, true},
	{"unknown members of every type", `{"a":"s","b":1.5e+10,"c":-0.0,"d":true,"e":false,"f":null,"g":[],"h":{},"i":[[[{"j":[{}]}]]],"k":"\u00e9\n"}`, true},
	{"unknown member names with escapes and UTF-8, nested", `{"x":{"\u0063hoices":1,"é":2}}`, true},
	{"duplicate unknown members", `{"id":"a","id":"b","choices":[]}`, true},
	{"two tool calls", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`, true},

	// What decodeFast leaves to encoding/json, valid or not.
	{"duplicate choices", `{"choices":[{"delta":{"content":"a"}}],"choices":[{"index":0}]}`, false},
	{"duplicate across case", `{"choices":[],"Choices":null}`, false},
	{"duplicate content", `{"choices":[{"delta":{"content":"a","content":"b"}}]}`, false},
	{"duplicate delta", `{"choices":[{"delta":{"content":"a"},"delta":null}]}`, false},
	{"escaped known name", `{"\u0063hoices":[{"delta":{"content":"x"}}]}`, false},
	{"escaped unknown name", `{"i\u0064":"x"}`, false},
	{"non-ASCII name", `{"choicés":[]}`, false},
	{"Kelvin sign folds to k", `{"usage":{"prompt_to` + "\u212a" + `ens":5}}`, false},
	{"long s folds to s", `{"choice` + "\u017f" + `":[]}`, false},
	{"index 1.0", `{"choices":[{"index":1.0}]}`, false},
	{"index 1e0", `{"choices":[{"index":1e0}]}`, false},
	{"index -0.0", `{"choices":[{"index":-0.0}]}`, false},
	{"tokens 1e2", `{"usage":{"prompt_tokens":1e2}}`, false},
	{"tokens overflow", `{"usage":{"prompt_tokens":99999999999999999999}}`, false},
	{"19 digits", `{"usage":{"prompt_tokens":1000000000000000000}}`, false},
	{"index as string", `{"choices":[{"index":"0"}]}`, false},
	{"index as bool", `{"choices":[{"index":true}]}`, false},
	{"content as number", `{"choices":[{"delta":{"content":5}}]}`, false},
	{"content as parts array", `{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}`, false},
	{"choices as object", `{"choices":{"0":{}}}`, false},
	{"delta as string", `{"choices":[{"delta":"x"}]}`, false},
	{"usage as array", `{"usage":[1]}`, false},
	{"tool_calls as object", `{"choices":[{"delta":{"tool_calls":{}}}]}`, false},
	{"id as number", `{"choices":[{"delta":{"tool_calls":[{"id":1}]}}]}`, false},
	{"name as object", `{"choices":[{"delta":{"function_call":{"name":{}}}}]}`, false},
	{"finish_reason as bool", `{"choices":[{"finish_reason":false}]}`, false},
	{"top level array", `[]`, false},
	{"top level string", `"x"`, false},
	{"top level number", `1`, false},
	{"trailing garbage", `{"choices":[]}x`, false},
	{"two objects", `{}{}`, false},
	{"trailing comma in object", `{"choices":[],}`, false},
	{"trailing comma in array", `{"choices":[{},]}`, false},
	{"missing colon", `{"choices" []}`, false},
	{"missing comma", `{"a":1 "b":2}`, false},
	{"unterminated", `{"choices":[{"delta":{"content":"x"}}]`, false},
	{"unterminated string", `{"choices":[{"delta":{"content":"x}}]}`, false},
	{"empty", ``, false},
	{"single quotes", `{'choices':[]}`, false},
	{"control character in string", "{\"choices\":[{\"delta\":{\"content\":\"a\nb\"}}]}", false},
	{"bad escape", `{"choices":[{"delta":{"content":"\x"}}]}`, false},
	{"short unicode escape", `{"choices":[{"delta":{"content":"\u12"}}]}`, false},
	{"bad number 01", `{"a":01}`, false},
	{"bad number 1.", `{"a":1.}`, false},
	{"bad number .5", `{"a":.5}`, false},
	{"bad number +1", `{"a":+1}`, false},
	{"bad number 1e", `{"a":1e}`, false},
	{"bad number -", `{"a":-}`, false},
	{"NaN", `{"a":NaN}`, false},
	{"bad literal", `{"a":nul}`, false},
	{"literal with tail", `{"a":truex}`, false},
	{"null with tail", `{"error":nullx}`, false},
	{"BOM", "\ufeff{}", false},
	{"vertical tab is not JSON space", "{\v}", false},
	{"deep nesting", `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false},
	{"too deep for encoding/json", `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, false},
}

var anthropicEvents = []chunkCase{
	{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}`, true},
	{"text block start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, true},
	{"ping", `{"type": "ping"}`, true},
	{"text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, \"world\"\n"}}`, true},
	{"block stop", `{"type":"content_block_stop","index":0}`, true},
	{"tool_use start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`, true},
	{"input_json delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}`, true},
	{"thinking start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`, true},
	{"thinking delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`, true},
	{"signature delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`, true},
	{"server tool result", `{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"T","url":"https://example.com","encrypted_content":"abc","page_age":null}]}}`, true},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`, true},
	{"message_delta full usage", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":null,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":89,"server_tool_use":{"web_search_requests":1}}}`, true},
	{"message_stop", `{"type":"message_stop"}`, true},
	{"Bedrock message_stop", `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":25,"outputTokenCount":15,"invocationLatency":1500,"firstByteLatency":300}}`, true},
	{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
	{"nulls", `{"type":null,"index":null,"message":null,"content_block":null,"delta":null,"usage":null,"error":null}`, true},
	{"case-variant names", `{"TYPE":"content_block_delta","Index":2,"Delta":{"Type":"text_delta","TEXT":"x","Partial_JSON":"y","Stop_Reason":"z"}}`, true},
	{"white space around", " \n{\"type\":\"ping\"}\r\n ", true},
	{"escapes", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9\ud83d\ude00\ud800x\t"}}`, true},
	{"duplicate type", `{"type":"ping","type":"message_stop"}`, false},
	{"duplicate index", `{"type":"content_block_delta","index":0,"index":1}`, false},
	{"index 0.0", `{"type":"content_block_delta","index":0.0}`, false},
	{"input_tokens 1e3", `{"type":"message_start","message":{"usage":{"input_tokens":1e3}}}`, false},
	{"text as number", `{"type":"content_block_delta","delta":{"text":1}}`, false},
	{"usage as string", `{"type":"message_delta","usage":"x"}`, false},
	{"trailing garbage", `{"type":"ping"}}`, false},
	{"not JSON", `event: ping`, false},
	{"empty", ``, false},
}

func TestOpenAIChunkDecode(t *testing.T) {
	testDecode(t, openAIChunks, oaChunkDecoder)
}

func TestAnthropicEventDecode(t *testing.T) {
	testDecode(t, anthropicEvents, anEventDecoder)
}

func testDecode[T any](t *testing.T, cases []chunkCase, d decoder[T]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.check(t, []byte(tc.data)); got != tc.fast {
				t.Errorf("decodeFast took it: %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestUnquoteString compares the string decoding with encoding/json, on
// the strings of the chunk tables among others.
func TestUnquoteString(t *testing.T) {
	for _, q := range []string{`""`, `"x"`, ` "x" `, `"\u00e9\ud83d\ude00\ud800\udc00\udbff\udfff\ud800"`, "\"\xff\xfe\xc0\xaf\"", `"\"\\\/\b\f\n\r\t"`} {
		checkUnquote(t, []byte(q))
	}
	for _, tc := range append(openAIChunks, anthropicEvents...) {
		checkUnquote(t, []byte(tc.data))
	}
}

// checkUnquote fails when unquoteString accepts q but encoding/json does
// not decode it to the same string.
func checkUnquote(t testing.TB, q []byte) {
	t.Helper()
	got, ok := unquoteString(q)
	if !ok {
		return
	}
	var want string
	if err := json.Unmarshal(q, &want); err != nil || got != want {
		t.Fatalf("unquoteString(%q) = %q; encoding/json: %q, %v", q, got, want, err)
	}
}

// FuzzOpenAIChunk checks that decodeFast never accepts what encoding/json
// would decode otherwise or reject, and that the decoder feed uses decodes
// and fails as encoding/json does.
func FuzzOpenAIChunk(f *testing.F) {
	for _, tc := range openAIChunks {
		if len(tc.data) < 1000 { // the 10001 levels slow the fuzzer down
			f.Add([]byte(tc.data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		oaChunkDecoder.check(t, data)
		checkUnquote(t, data)
	})
}

// FuzzAnthropicEvent is FuzzOpenAIChunk for Anthropic stream events.
func FuzzAnthropicEvent(f *testing.F) {
	for _, tc := range anthropicEvents {
		if len(tc.data) < 1000 { // the 10001 levels slow the fuzzer down
			f.Add([]byte(tc.data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		anEventDecoder.check(t, data)
	})
}

// BenchmarkOpenAIChunk decodes a typical content delta and tool-call delta
// with encoding/json and with decodeFast.
func BenchmarkOpenAIChunk(b *testing.B) {
	chunks := []struct{ name, data string }{
		{"content", openAIChunks[1].data},
		{"tool-call", openAIChunks[3].data},
	}
	for _, c := range chunks {
		data := []byte(c.data)
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var chunk oaChunk
				if err := json.Unmarshal(data, &chunk); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var chunk oaChunk
				if !chunk.decodeFast(data) {
					b.Fatal("declined")
				}
			}
		})
	}
}

// BenchmarkAnthropicEvent is BenchmarkOpenAIChunk for a text delta event.
func BenchmarkAnthropicEvent(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev anEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev anEvent
			if !ev.decodeFast(data) {
				b.Fatal("declined")
			}
		}
	})
}
