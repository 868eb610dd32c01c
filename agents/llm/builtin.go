package llm

import (
	"context"
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

// playback answers with req.Params.Playback[i], i the number of assistant
// messages in the request (the call's history and its own earlier model
// turns), wrapping around. It keeps no counter: nothing survives a call,
// so a call without history gets the first answer whoever sent it, and a
// conversation that sends its history back gets the next one.
type playback struct{}

// NewPlayback returns the built-in model that replays params.playback.
func NewPlayback() Provider { return playback{} }

func (playback) Name() string                            { return "builtin" }
func (playback) Preflight(context.Context, string) error { return nil }

func (playback) Chat(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list := req.Params.Playback
	if len(list) == 0 {
		return &Response{Text: playbackEmpty, FinishReason: "stop"}, nil
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			turn++
		}
	}
	return textAnswer(req, list[turn%len(list)]), nil
}

// textAnswer is a built-in model's answer, given to req.OnText whole.
func textAnswer(req Request, text string) *Response {
	if req.OnText != nil && text != "" {
		req.OnText(text)
	}
	return &Response{Text: text, FinishReason: "stop"}
}
