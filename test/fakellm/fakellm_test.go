package fakellm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// The official SDKs read the fake's well-behaved streams: evidence that the
// fake is protocol-faithful, independent of the project's own decoder.

func TestOpenAISDKReadsFake(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(
		fakellm.Text("Hello from the fake").Usage(7, 4),
		fakellm.ToolCalls(fakellm.Call{Name: "a", Args: json.RawMessage(`{"x":1}`)},
			fakellm.Call{Name: "b", Args: json.RawMessage(`{"y":"two"}`)}),
	)
	client := openai.NewClient(option.WithBaseURL(srv.OpenAIBaseURL()), option.WithAPIKey("k"),
		option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:         "fake-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	acc := readOpenAI(t, &client, params)
	if got := acc.Choices[0].Message.Content; got != "Hello from the fake" {
		t.Errorf("content = %q", got)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.PromptTokens != 7 || acc.Usage.CompletionTokens != 4 {
		t.Errorf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	acc = readOpenAI(t, &client, params)
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 2 || calls[1].Function.Name != "b" || calls[1].Function.Arguments != `{"y":"two"}` {
		t.Errorf("tool calls = %+v", calls)
	}
}

func readOpenAI(t *testing.T, client *openai.Client, params openai.ChatCompletionNewParams) openai.ChatCompletionAccumulator {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("openai-go stream: %v", err)
	}
	return acc
}

func TestAnthropicSDKReadsFake(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.ToolCalls(fakellm.Call{ID: "toolu_1", Name: "look", Args: json.RawMessage(`{"q":"x"}`)}).Usage(11, 6))
	client := anthropic.NewClient(aoption.WithBaseURL(srv.AnthropicBaseURL()), aoption.WithAPIKey("k"),
		aoption.WithMaxRetries(0))
	stream := client.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{
		Model: "fake-model", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("anthropic-sdk-go stream: %v", err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 {
		t.Fatalf("message = %+v", msg)
	}
	tu := msg.Content[0]
	if tu.Type != "tool_use" || tu.ID != "toolu_1" || tu.Name != "look" || string(tu.Input) != `{"q":"x"}` {
		t.Errorf("tool_use = %+v (input %s)", tu, tu.Input)
	}
	if msg.Usage.InputTokens != 11 || msg.Usage.OutputTokens != 6 {
		t.Errorf("usage = %+v", msg.Usage)
	}
	if h := srv.ChatRequests()[0].Header; h.Get("X-Api-Key") != "k" {
		t.Errorf("x-api-key = %q", h.Get("X-Api-Key"))
	}
}

func TestModelsAndKeys(t *testing.T) {
	srv := fakellm.New(t)
	srv.SetModels([]string{"m1", "m2"})
	srv.RequireKey("good")
	tests := []struct {
		name, path, key string
		status          int
		contains        string
	}{
		{"list", "/v1/models", "Bearer good", 200, `"id":"m2"`},
		{"get", "/v1/models/m1", "Bearer good", 200, `"type":"model"`},
		{"unknown model", "/v1/models/nope", "Bearer good", 404, "not_found_error"},
		{"wrong key openai", "/v1/models", "Bearer bad", 401, "Incorrect API key provided: bad"},
		{"missing key anthropic", "/v1/models/m1", "", 401, `"type":"authentication_error"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+tc.path, nil)
			if tc.key != "" {
				req.Header.Set("Authorization", tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.contains) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
	if n := len(srv.Requests()); n != len(tests) {
		t.Errorf("recorded %d requests, want %d", n, len(tests))
	}
}

func TestScriptOrderAndEcho(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Status(418).Message("teapot"))
	post := func() (int, string) {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"hello there"}]}]}`
		resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(); code != 418 || !strings.Contains(body, "teapot") {
		t.Errorf("scripted: %d %s", code, body)
	}
	if code, body := post(); code != 200 || !strings.Contains(body, `"text":"echo`) || !strings.Contains(body, "message_stop") {
		t.Errorf("echo: %d %s", code, body)
	}
	if srv.Pending() != 0 {
		t.Errorf("pending = %d", srv.Pending())
	}
	c := srv.ChatRequests()[1].Chat
	if c.API != "anthropic" || c.LastUserText() != "hello there" || !c.Stream {
		t.Errorf("decoded = %+v", c)
	}
}

func TestWhenBeatsTheScriptEveryTime(t *testing.T) {
	srv := fakellm.New(t)
	srv.When("break", fakellm.Status(503).Message("standing fault"))
	srv.Script(fakellm.Text("scripted"))
	post := func(text string) (int, string) {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"please ` + text + `"}]}`
		resp, err := http.Post(srv.OpenAIBaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 2 {
		if code, body := post("break it"); code != 503 || !strings.Contains(body, "standing fault") {
			t.Errorf("ruled: %d %s", code, body)
		}
	}
	if srv.Pending() != 1 {
		t.Errorf("a ruled request took a scripted step: pending = %d", srv.Pending())
	}
	if code, body := post("go on"); code != 200 || !strings.Contains(body, `"content":"scri"`) {
		t.Errorf("scripted: %d %s", code, body)
	}
}
