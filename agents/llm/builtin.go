package llm

import (
	"context"
	"sync/atomic"
)

// The built-in models answer without any network: "passthrough" repeats the
// last user message, "playback" replays params.playback in turn. They never
// call tools and report zero usage.

// playbackEmpty is the answer of a playback model with an empty list.
const playbackEmpty = "(playback list empty)"

type passthrough struct{}

// NewPassthrough returns the built-in model that answers with the text of
// the last user message.
func NewPassthrough() Provider { return passthrough{} }

func (passthrough) Name() string                            { return "builtin" }
func (passthrough) Preflight(context.Context, string) error { return nil }

func (passthrough) Chat(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return textAnswer(req, lastUserText(req.Messages)), nil
}

// lastUserText is the text of the last user message ("" when none).
func lastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// playback answers with req.Params.Playback[i], i advancing by one per call
// of this Provider value and wrapping around. The counter is per Provider,
// so each agent built with its own NewPlayback replays its list from the
// start; concurrent calls each get a distinct position.
type playback struct {
	next atomic.Uint64
}

// NewPlayback returns the built-in model that replays params.playback.
func NewPlayback() Provider { return &playback{} }

func (*playback) Name() string                            { return "builtin" }
func (*playback) Preflight(context.Context, string) error { return nil }

func (p *playback) Chat(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list := req.Params.Playback
	if len(list) == 0 {
		return &Response{Text: playbackEmpty, FinishReason: "stop"}, nil
	}
	i := (p.next.Add(1) - 1) % uint64(len(list))
	return textAnswer(req, list[i]), nil
}

// textAnswer is a built-in model's answer, given to req.OnText whole.
func textAnswer(req Request, text string) *Response {
	if req.OnText != nil && text != "" {
		req.OnText(text)
	}
	return &Response{Text: text, FinishReason: "stop"}
}
