package fakellm

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// Step is one scripted answer, consumed by one chat request (either API).
// Build it with Text, ToolCalls, Status, Hang or StreamError and refine it
// with Quirks and Usage. Steps are values; copies share a Hang's signals.
type Step struct {
	kind       stepKind
	text       string
	calls      []Call
	status     int
	retryAfter time.Duration
	message    string
	quirks     map[Quirk]bool
	usage      *[2]int64 // input, output tokens
	hang       *hangSignal
	delay      time.Duration // pause after the response headers
}

type stepKind int

const (
	kindText stepKind = iota
	kindToolCalls
	kindStatus
	kindHang
	kindStreamError
	kindFoundCall
)

// Call is one tool call the fake model makes. ID is generated when empty;
// Args nil means {}.
type Call struct {
	ID   string
	Name string
	Args json.RawMessage
}

// Quirk makes an answer look like a real, imperfect server. All quirks apply
// to the OpenAI API; for the Anthropic API QuirkNoFinishReason (no
// message_delta/message_stop), QuirkMalformedChunk and QuirkPing apply and
// the others are ignored.
type Quirk int

const (
	// QuirkNoIndex omits "index" from tool-call deltas (Ollama); argument
	// fragments after the first delta carry neither index nor id.
	QuirkNoIndex Quirk = iota + 1
	// QuirkChangingIDs gives every chunk a different "id" (LiteLLM).
	QuirkChangingIDs
	// QuirkCumulativeUsage puts running usage totals in every chunk
	// (llama.cpp, vLLM continuous_usage_stats).
	QuirkCumulativeUsage
	// QuirkNullError adds "error": null to every chunk.
	QuirkNullError
	// QuirkPing writes ": ping" comment lines between chunks.
	QuirkPing
	// QuirkNoFinishReason ends the stream without a finish_reason.
	QuirkNoFinishReason
	// QuirkMalformedChunk sends a data line that is not JSON mid-stream.
	QuirkMalformedChunk
)

// Text answers with text (and finish_reason "stop" / stop_reason "end_turn").
func Text(answer string) Step { return Step{kind: kindText, text: answer} }

// ToolCalls answers with one or more (parallel) tool calls.
func ToolCalls(calls ...Call) Step { return Step{kind: kindToolCalls, calls: calls} }

// CallFound answers with one tool call of a tool the model found: the
// first tool named in the conversation's last tool result, read as JSON
// {"tools": [{"name": ...}, ...]} (what search_tools answers). The name
// comes from the request, never from the script, as a real model takes it
// from its search's result. Args nil means {}. When the last tool result
// names no tool, or the request does not offer the tool it names, the fake
// answers with text saying so instead (which a test then sees as the
// model's answer).
func CallFound(args json.RawMessage) Step {
	return Step{kind: kindFoundCall, calls: []Call{{Args: args}}}
}

// Status answers with an HTTP error in the API's error format. A retryAfter
// of whole seconds is sent as Retry-After: N, anything else as
// retry-after-ms (OpenAI's millisecond header).
func Status(code int, retryAfter ...time.Duration) Step {
	s := Step{kind: kindStatus, status: code}
	if len(retryAfter) > 0 {
		s.retryAfter = retryAfter[0]
	}
	return s
}

// StreamError starts a stream, then sends an error object (OpenAI: a chunk
// with a non-null "error"; Anthropic: an "error" event) and ends.
func StreamError(message string) Step { return Step{kind: kindStreamError, message: message} }

// Hang sends the response headers and one chunk, then blocks until the
// client goes away (or the server closes). Started is closed once the chunk
// is flushed, Disconnected once the client's context ended.
func Hang() Step {
	return Step{kind: kindHang, hang: &hangSignal{started: make(chan struct{}), disconnected: make(chan struct{})}}
}

// Quirks returns a copy of s with the given quirks enabled.
func (s Step) Quirks(q ...Quirk) Step {
	m := make(map[Quirk]bool, len(s.quirks)+len(q))
	for k, v := range s.quirks {
		m[k] = v
	}
	for _, k := range q {
		m[k] = true
	}
	s.quirks = m
	return s
}

// Usage returns a copy of s that reports these token counts. Without it the
// fake reports input = words in the request's messages, output = streamed
// pieces.
func (s Step) Usage(input, output int64) Step {
	s.usage = &[2]int64{input, output}
	return s
}

// Message returns a copy of s with the error message used by Status.
func (s Step) Message(msg string) Step {
	s.message = msg
	return s
}

// Started is closed when a Hang step has sent its first chunk (nil for other
// steps).
func (s Step) Started() <-chan struct{} {
	if s.hang == nil {
		return nil
	}
	return s.hang.started
}

// Disconnected is closed when the client of a Hang step went away (nil for
// other steps).
func (s Step) Disconnected() <-chan struct{} {
	if s.hang == nil {
		return nil
	}
	return s.hang.disconnected
}

type hangSignal struct {
	started, disconnected chan struct{}
	startOnce, discOnce   sync.Once
}

func (h *hangSignal) markStarted() { h.startOnce.Do(func() { close(h.started) }) }
func (h *hangSignal) markGone()    { h.discOnce.Do(func() { close(h.disconnected) }) }

func (s Step) has(q Quirk) bool { return s.quirks[q] }

// Delay makes the answer pause for d after its response headers (a slow
// model); the pause ends early when the client goes away.
func (st Step) Delay(d time.Duration) Step {
	st.delay = d
	return st
}

// found resolves a CallFound step against the request c: a tool call of
// the tool the last tool result names first, or a text saying why not.
func (st Step) found(c *Chat) Step {
	text, ok := lastToolResult(c)
	if !ok {
		return Text("fakellm: CallFound: the request has no tool result")
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil || len(r.Tools) == 0 || r.Tools[0].Name == "" {
		return Text("fakellm: CallFound: the last tool result names no tool: " + text)
	}
	name := r.Tools[0].Name
	if !slices.Contains(c.Tools, name) {
		return Text("fakellm: CallFound: " + name + " is not among the tools offered: " + strings.Join(c.Tools, ","))
	}
	out := st
	out.kind, out.calls = kindToolCalls, []Call{{ID: st.calls[0].ID, Name: name, Args: st.calls[0].Args}}
	return out
}

// lastToolResult is the text of the conversation's last tool result
// (OpenAI: a "tool" message; Anthropic: a tool_result block).
func lastToolResult(c *Chat) (string, bool) {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role == "tool" {
			return m.Text, true
		}
		if n := len(m.ToolResults); n > 0 {
			return m.ToolResults[n-1].Text, true
		}
	}
	return "", false
}
