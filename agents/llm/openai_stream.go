package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oasse "github.com/openai/openai-go/v3/packages/ssestream"
)

// This is the project's own Chat Completions stream accumulator. openai-go's
// ChatCompletionAccumulator is not used (checked against openai-go v3.96.0): it merges
// index-less tool-call deltas into one call, drops chunks whose id changed
// and sums cumulative usage. The rules here:
//   - a tool-call delta with an index continues the call seen at that index,
//     unless it carries a new id (then it starts a new call);
//   - a delta without index starts a new call when its id is new, and
//     otherwise appends to the last call (Ollama);
//   - chunk ids are ignored (LiteLLM changes them mid-stream);
//   - usage is the maximum seen per field, never a sum (llama.cpp and vLLM
//     continuous usage report running totals);
//   - "error": null is ignored, any other error fails the call;
//   - a stream without finish_reason is an error.

// oaChunk is the subset of a chat.completion.chunk we read, decoded with
// encoding/json/v2 (decodeEvent; openai-go's ChatCompletionChunk would do,
// but its decoder costs more and we read few members). A hand-written
// decoder was measured and removed: it bought 1-6% of the agent-loop
// throughput.
type oaChunk struct {
	Choices []oaChoice      `json:"choices"`
	Usage   *oaUsage        `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type oaChoice struct {
	Index int     `json:"index"`
	Delta oaDelta `json:"delta"`
	// Message is set instead of Delta by a server that ignored
	// "stream": true and answered with one chat.completion object.
	Message      *oaDelta `json:"message"`
	FinishReason *string  `json:"finish_reason"`
}

type oaUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type oaDelta struct {
	Content   *string       `json:"content"`
	ToolCalls []oaToolDelta `json:"tool_calls"`
	Function  *oaFuncDelta  `json:"function_call"` // legacy single call
}

type oaToolDelta struct {
	Index    *int        `json:"index"`
	ID       string      `json:"id"`
	Function oaFuncDelta `json:"function"`
}

type oaFuncDelta struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a string; some servers send an object
}

type oaCall struct {
	id, name string
	args     strings.Builder
}

// oaAccumulator folds chunks into one Response.
type oaAccumulator struct {
	text    strings.Builder
	calls   []*oaCall
	byIndex map[int]int // delta index -> position in calls
	finish  string
	usage   Usage
	done    bool         // [DONE] seen
	onText  func(string) // Request.OnText; nil = none
}

// errNoFinish is returned for a stream that ended without finish_reason.
var errNoFinish = errors.New("stream ended without finish_reason")

// readOpenAIBody reads a 2xx answer: normally an SSE stream, but a server
// that ignored "stream": true (older Ollama with tools) sends one JSON object.
func readOpenAIBody(resp *http.Response, onText func(string)) (*Response, error) {
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBytes))
		if err != nil {
			return nil, fmt.Errorf("reading response: %w", err)
		}
		acc := newOAAccumulator(onText)
		if err := acc.feed(body); err != nil {
			return nil, err
		}
		return acc.result()
	case isHTML(ct):
		return nil, errHTML
	}
	return readOpenAIStream(resp, onText)
}

// readOpenAIStream reads an SSE answer to the end (or [DONE]) with
// openai-go's event decoder and returns the assistant turn, handing each
// text delta to onText (when not nil) as it arrives. Errors are not
// prefixed with the provider name.
func readOpenAIStream(resp *http.Response, onText func(string)) (*Response, error) {
	dec := oasse.NewDecoder(boundStream(resp))
	return readEvents(dec, func() []byte { return dec.Event().Data }, newOAAccumulator(onText))
}

func newOAAccumulator(onText func(string)) *oaAccumulator {
	return &oaAccumulator{byIndex: map[int]int{}, onText: onText}
}

func (a *oaAccumulator) finished() bool { return a.done }

// feed takes one event's data.
func (a *oaAccumulator) feed(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		a.done = true
		return nil
	}
	var c oaChunk
	if err := decodeEvent(data, &c); err != nil {
		return fmt.Errorf("malformed stream chunk %q: %w", clip(data, 80), err)
	}
	if msg := errorText(c.Error); msg != "" {
		return fmt.Errorf("stream error: %s", msg)
	}
	if c.Usage != nil {
		a.usage.InputTokens = max(a.usage.InputTokens, c.Usage.PromptTokens)
		a.usage.OutputTokens = max(a.usage.OutputTokens, c.Usage.CompletionTokens)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 { // we never ask for n > 1
			continue
		}
		a.delta(ch.Delta, false)
		if ch.Message != nil {
			a.delta(*ch.Message, true)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
	}
	return nil
}

// delta applies one choice delta. In a whole message (whole=true) every
// tool call is complete, so its position stands in for a missing index.
func (a *oaAccumulator) delta(d oaDelta, whole bool) {
	if d.Content != nil {
		a.text.WriteString(*d.Content)
		if a.onText != nil && *d.Content != "" {
			a.onText(*d.Content)
		}
	}
	for i, tc := range d.ToolCalls {
		if whole && tc.Index == nil {
			tc.Index = &i
		}
		a.toolDelta(tc)
	}
	if d.Function != nil {
		a.toolDelta(oaToolDelta{Index: new(int), Function: *d.Function})
	}
}

// toolDelta applies one tool-call delta by the rules in the file comment.
func (a *oaAccumulator) toolDelta(d oaToolDelta) {
	var call *oaCall
	if d.Index != nil {
		if pos, ok := a.byIndex[*d.Index]; ok && (d.ID == "" || d.ID == a.calls[pos].id) {
			call = a.calls[pos]
		} else {
			call = a.newCall(d.ID)
			a.byIndex[*d.Index] = len(a.calls) - 1
		}
	} else {
		last := len(a.calls) - 1
		if last >= 0 && (d.ID == "" || d.ID == a.calls[last].id) {
			call = a.calls[last]
		} else {
			call = a.newCall(d.ID)
		}
	}
	call.name = mergeName(call.name, d.Function.Name)
	call.args.WriteString(argsFragment(d.Function.Arguments))
}

func (a *oaAccumulator) newCall(id string) *oaCall {
	c := &oaCall{id: id}
	a.calls = append(a.calls, c)
	return c
}

// mergeName handles servers that send the name once, repeat it in every
// delta, resend it cumulatively, or (rarely) split it into fragments.
func mergeName(have, got string) string {
	switch {
	case got == "" || got == have:
		return have
	case have == "" || strings.HasPrefix(got, have):
		return got
	}
	return have + got
}

// argsFragment returns arguments text: a JSON string is unquoted, anything
// else (an object some servers send) is kept verbatim.
func argsFragment(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// result builds the Response once the stream ended.
func (a *oaAccumulator) result() (*Response, error) {
	if a.finish == "" {
		return nil, errNoFinish
	}
	resp := &Response{Text: a.text.String(), Usage: a.usage}
	for i, c := range a.calls {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: id, Name: c.name, Arguments: jsonArgs(c.args.String())})
	}
	resp.FinishReason = normaliseFinish(a.finish, len(resp.ToolCalls) > 0)
	return resp, nil
}

// jsonArgs turns accumulated argument text into JSON: empty becomes {};
// text that is not valid JSON is passed as a JSON string so the caller can
// report it to the model instead of failing the turn.
func jsonArgs(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// normaliseFinish maps provider finish reasons to stop/tool_calls/length.
// Some servers (Ollama) say "stop" while returning tool calls.
func normaliseFinish(reason string, hasCalls bool) string {
	switch reason {
	case "stop", "end_turn", "stop_sequence", "eos":
		if hasCalls {
			return "tool_calls"
		}
		return "stop"
	case "tool_calls", "function_call", "tool_use":
		return "tool_calls"
	case "length", "max_tokens", "model_length":
		return "length"
	}
	return reason
}

// clip shortens b for an error message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
