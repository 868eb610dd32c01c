package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	ansse "github.com/anthropics/anthropic-sdk-go/packages/ssestream"
)

// anEvent is the subset of a Messages stream event we read. The event type
// is taken from the JSON "type" member, not the SSE "event:" line.
// Decoded with encoding/json/v2 (decodeEvent; a hand-written decoder was
// measured and removed: the agent loop did not show it).
type anEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Text  string          `json:"text"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type anUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// anBlock is one content block being streamed.
type anBlock struct {
	kind     string // "text", "tool_use", others ignored
	id, name string
	text     strings.Builder // text, or the tool input JSON
	input    json.RawMessage // input given at block start
}

// anAccumulator folds a Messages stream into one Response. Usage in
// message_delta is cumulative, so the maximum per field is kept.
type anAccumulator struct {
	blocks  []*anBlock
	byIndex map[int]*anBlock
	stop    string
	usage   Usage
	done    bool         // message_stop seen
	onText  func(string) // Request.OnText; nil = none
}

var errNoStopReason = errors.New("stream ended without stop_reason")

// readAnthropicStream reads an SSE answer until message_stop or its end
// with anthropic-sdk-go's event decoder, handing each text delta to onText
// (when not nil) as it arrives.
func readAnthropicStream(resp *http.Response, onText func(string)) (*Response, error) {
	dec := ansse.NewDecoder(boundStream(resp))
	acc := &anAccumulator{byIndex: map[int]*anBlock{}, onText: onText}
	return readEvents(dec, func() []byte { return dec.Event().Data }, acc)
}

func (a *anAccumulator) finished() bool { return a.done }

func (a *anAccumulator) feed(data []byte) error {
	var ev anEvent
	if err := decodeEvent(data, &ev); err != nil {
		return fmt.Errorf("malformed stream event %q: %w", clip(data, 80), err)
	}
	switch ev.Type {
	case "message_start":
		a.addUsage(ev.Message.Usage)
	case "content_block_start":
		b := &anBlock{kind: ev.ContentBlock.Type, id: ev.ContentBlock.ID,
			name: ev.ContentBlock.Name, input: ev.ContentBlock.Input}
		b.text.WriteString(ev.ContentBlock.Text)
		a.blocks = append(a.blocks, b)
		a.byIndex[ev.Index] = b
	case "content_block_delta":
		if b := a.byIndex[ev.Index]; b != nil {
			b.text.WriteString(ev.Delta.Text)
			b.text.WriteString(ev.Delta.PartialJSON)
			if a.onText != nil && b.kind == "text" && ev.Delta.Text != "" {
				a.onText(ev.Delta.Text)
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = ev.Delta.StopReason
		}
		if ev.Usage != nil {
			a.addUsage(*ev.Usage)
		}
	case "message_stop":
		a.done = true
	case "error":
		msg := errorText(ev.Error)
		if msg == "" {
			msg = "unknown error"
		}
		return fmt.Errorf("stream error: %s", msg)
	}
	// ping, content_block_stop and unknown events need nothing.
	return nil
}

func (a *anAccumulator) addUsage(u anUsage) {
	a.usage.InputTokens = max(a.usage.InputTokens, u.InputTokens)
	a.usage.OutputTokens = max(a.usage.OutputTokens, u.OutputTokens)
}

func (a *anAccumulator) result() (*Response, error) {
	if a.stop == "" {
		return nil, errNoStopReason
	}
	resp := &Response{Usage: a.usage}
	var text strings.Builder
	for _, b := range a.blocks {
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			args := b.text.String()
			if strings.TrimSpace(args) == "" && len(b.input) > 0 {
				args = string(b.input)
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.id, Name: b.name, Arguments: jsonArgs(args)})
		}
	}
	resp.Text = text.String()
	resp.FinishReason = normaliseFinish(a.stop, false)
	return resp, nil
}
