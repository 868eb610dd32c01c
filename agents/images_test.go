package agents

import (
	"errors"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// A text-only model's conversation: a tool result's images are dropped
// with a note whatever drop_images says (the tool sent them, not the
// caller); a message's are refused, or dropped with a note under
// drop_images; the caller's messages are never changed.
func TestWithoutImages(t *testing.T) {
	img := []llm.Image{{MIMEType: "image/png", Data: []byte("x")}}
	msgs := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "shot"}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Text: "a screenshot", Images: img},
	}
	for _, drop := range []bool{false, true} {
		m := &modelRef{ref: "openai.t", textOnly: true, dropImages: drop}
		out, err := m.withoutImages(msgs)
		if err != nil || len(out[1].Images) != 0 || !strings.Contains(out[1].Text, "a screenshot\n[1 image(s) omitted: model openai.t cannot see images]") {
			t.Fatalf("drop_images %v: tool result %+v, %v", drop, out, err)
		}
		if len(msgs[1].Images) != 1 || msgs[1].Text != "a screenshot" {
			t.Fatalf("the caller's messages changed: %+v", msgs[1])
		}
	}
	user := append(msgs, llm.Message{Role: llm.RoleUser, Text: "look", Images: img})
	var ae *ArgumentError
	if _, err := (&modelRef{ref: "openai.t", textOnly: true}).withoutImages(user); !errors.As(err, &ae) || !strings.Contains(err.Error(), "no vision capability") {
		t.Fatalf("a user's image: %v, want the vision error", err)
	}
	out, err := (&modelRef{ref: "openai.t", textOnly: true, dropImages: true}).withoutImages(user)
	if err != nil || len(out[2].Images) != 0 || !strings.HasPrefix(out[2].Text, "look\n[1 image(s) omitted") {
		t.Fatalf("drop_images: %+v %v", out[2], err)
	}
}
