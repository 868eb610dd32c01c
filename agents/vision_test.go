package agents_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// A model whose capabilities say vision false gets no image: a message
// with one is refused with an error naming the capability, or, with
// drop_images, reaches the model without it and with a note; a model
// with vision (or without a capabilities entry) gets the image.
func TestVisionFalseRefusesImages(t *testing.T) {
	fake := fakellm.New(t)
	cfg := `
name: unit
models:
  providers:
    openai: {base_url: "` + fake.OpenAIBaseURL() + `", api_key: k}
  capabilities:
    openai.text: {vision: false}
    openai.lossy: {vision: false, drop_images: true}
    openai.eyes: {vision: true}
agents:
  text: {model: openai.text}
  lossy: {model: openai.lossy}
  eyes: {model: openai.eyes}
`
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": p})
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	image := []any{map[string]any{"data": png, "mime_type": "image/png"}}
	send := func(agent string, args map[string]any) string {
		raw, _ := json.Marshal(args)
		return ta.Send(t, agent, agenttest.SendBody("1", "send_message", string(raw), ""), agenttest.LegacySSE).Body
	}
	cases := []struct {
		name, agent string
		args        map[string]any
		wantErr     string
		images      int // the model's images; -1: no call
		note        bool
	}{
		{"refused in the message", "text", map[string]any{"message": "look", "images": image}, "model openai.text has no vision capability", -1, false},
		{"refused in the history", "text", map[string]any{"message": "and?", "history": []any{map[string]any{"role": "user", "content": "look", "images": image}}},
			"has no vision capability", -1, false},
		{"text alone passes", "text", map[string]any{"message": "just text"}, "", 0, false},
		{"dropped with a note", "lossy", map[string]any{"message": "look", "images": image}, "", 0, true},
		{"seen with vision", "eyes", map[string]any{"message": "look", "images": image}, "", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.ChatRequests())
			body := send(tc.agent, tc.args)
			reqs := fake.ChatRequests()[before:]
			if tc.wantErr != "" {
				if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, tc.wantErr) || len(reqs) != 0 {
					t.Fatalf("want error %q and no model call (%d made): %s", tc.wantErr, len(reqs), body)
				}
				return
			}
			if len(reqs) != 1 || strings.Contains(body, `"isError":true`) {
				t.Fatalf("%d model calls, answer %s", len(reqs), body)
			}
			msgs := reqs[0].Chat.Messages
			last := msgs[len(msgs)-1]
			if len(last.Images) != tc.images || tc.note != strings.Contains(last.Text, "1 image(s) omitted: model openai.lossy cannot see images") {
				t.Fatalf("the model got %+v", last)
			}
		})
	}
}
