package llm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

func TestChatText(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(fakellm.Text("Hello, wörld — streamed!").Usage(12, 5))
			p := newProvider(t, kind, srv)
			resp, err := p.Chat(ctxT(t), userReq("hi"))
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			if resp.Text != "Hello, wörld — streamed!" || resp.FinishReason != "stop" {
				t.Errorf("resp = %+v", resp)
			}
			if resp.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 5}) {
				t.Errorf("usage = %+v, want 12/5", resp.Usage)
			}
			if p.Name() != kind {
				t.Errorf("Name = %q", p.Name())
			}
		})
	}
}

func TestChatUnscriptedEcho(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			resp, err := newProvider(t, kind, srv).Chat(ctxT(t), userReq("ping me"))
			if err != nil || resp.Text != "echo: ping me" {
				t.Fatalf("resp = %+v, err = %v", resp, err)
			}
		})
	}
}

func TestChatToolCalls(t *testing.T) {
	calls := []fakellm.Call{
		{Name: "search", Args: json.RawMessage(`{"q":"go generics","limit":3}`)},
		{Name: "fetch", Args: json.RawMessage(`{"url":"https://example.com/a?b=c"}`)},
	}
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(fakellm.ToolCalls(calls...))
			req := userReq("find it")
			req.Tools = []llm.Tool{
				{Name: "search", Description: "web search", InputSchema: json.RawMessage(
					`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)},
				{Name: "fetch", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)},
			}
			resp, err := newProvider(t, kind, srv).Chat(ctxT(t), req)
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 2 {
				t.Fatalf("resp = %+v", resp)
			}
			for i, c := range calls {
				got := resp.ToolCalls[i]
				if got.Name != c.Name || got.ID == "" {
					t.Errorf("call %d = %+v", i, got)
				}
				jsonEq(t, got.Arguments, c.Args)
			}
			if tools := lastChat(t, srv).Tools; strings.Join(tools, ",") != "search,fetch" {
				t.Errorf("tools offered = %v", tools)
			}
		})
	}
}

var png = []byte("\x89PNG\r\n\x1a\nfake-image-bytes")

func TestChatUserImages(t *testing.T) {
	wantFormat := map[string]string{"openai": "image_url", "anthropic": "base64"}
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			req := llm.Request{Model: "fake-model", Messages: []llm.Message{{Role: llm.RoleUser,
				Text: "what is this?", Images: []llm.Image{{MIMEType: "image/png", Data: png}}}}}
			if _, err := newProvider(t, kind, srv).Chat(ctxT(t), req); err != nil {
				t.Fatalf("chat: %v", err)
			}
			msgs := lastChat(t, srv).Messages
			if len(msgs) != 1 || msgs[0].Role != "user" || len(msgs[0].Images) != 1 {
				t.Fatalf("messages = %+v", msgs)
			}
			img := msgs[0].Images[0]
			if img.Format != wantFormat[kind] || img.MIMEType != "image/png" || !bytes.Equal(img.Data, png) {
				t.Errorf("image = %+v", img)
			}
			if msgs[0].Text != "what is this?" {
				t.Errorf("text = %q", msgs[0].Text)
			}
		})
	}
}

// toolConversation is a turn with two tool results, the first with an image.
func toolConversation() llm.Request {
	return llm.Request{Model: "fake-model", System: "be brief", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "look at both"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "c1", Name: "shot", Arguments: json.RawMessage(`{"page":1}`)},
			{ID: "c2", Name: "shot", Arguments: json.RawMessage(`{"page":2}`)},
		}},
		{Role: llm.RoleTool, ToolCallID: "c1", Text: "page one", Images: []llm.Image{{MIMEType: "image/png", Data: png}}},
		{Role: llm.RoleTool, ToolCallID: "c2", Text: "no such page", IsError: true},
	}}
}

func TestOpenAIToolResultImages(t *testing.T) {
	srv := fakellm.New(t)
	if _, err := newProvider(t, "openai", srv).Chat(ctxT(t), toolConversation()); err != nil {
		t.Fatalf("chat: %v", err)
	}
	c := lastChat(t, srv)
	roles := []string{}
	for _, m := range c.Messages {
		roles = append(roles, m.Role)
	}
	// Both tool messages stay right after the assistant turn; the image
	// follows them in a user message.
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles = %s", got)
	}
	if c.System != "be brief" {
		t.Errorf("system = %q", c.System)
	}
	asst := c.Messages[2]
	if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].ID != "c1" {
		t.Errorf("assistant = %+v", asst)
	}
	jsonEq(t, asst.ToolCalls[1].Args, json.RawMessage(`{"page":2}`))
	if c.Messages[3].ToolCallID != "c1" || c.Messages[3].Text != "page one" {
		t.Errorf("tool 1 = %+v", c.Messages[3])
	}
	if !strings.Contains(c.Messages[4].Text, "no such page") || !strings.HasPrefix(c.Messages[4].Text, "Error") {
		t.Errorf("tool 2 = %+v", c.Messages[4])
	}
	last := c.Messages[5]
	if len(last.Images) != 1 || last.Images[0].Format != "image_url" || !bytes.Equal(last.Images[0].Data, png) {
		t.Errorf("image message = %+v", last)
	}
}

func TestAnthropicToolResultImages(t *testing.T) {
	srv := fakellm.New(t)
	if _, err := newProvider(t, "anthropic", srv).Chat(ctxT(t), toolConversation()); err != nil {
		t.Fatalf("chat: %v", err)
	}
	c := lastChat(t, srv)
	if c.System != "be brief" || len(c.Messages) != 3 {
		t.Fatalf("system %q, messages = %+v", c.System, c.Messages)
	}
	if asst := c.Messages[1]; asst.Role != "assistant" || len(asst.ToolCalls) != 2 {
		t.Errorf("assistant = %+v", asst)
	}
	res := c.Messages[2] // both results merged into one user message
	if res.Role != "user" || len(res.ToolResults) != 2 {
		t.Fatalf("results = %+v", res)
	}
	r1, r2 := res.ToolResults[0], res.ToolResults[1]
	if r1.ToolUseID != "c1" || r1.Text != "page one" || r1.IsError || len(r1.Images) != 1 ||
		r1.Images[0].Format != "base64" || !bytes.Equal(r1.Images[0].Data, png) {
		t.Errorf("result 1 = %+v", r1)
	}
	if r2.ToolUseID != "c2" || !r2.IsError || r2.Text != "no such page" {
		t.Errorf("result 2 = %+v", r2)
	}
	if mt, _ := c.Body["max_tokens"].(float64); mt != 4096 {
		t.Errorf("max_tokens = %v, want default 4096", c.Body["max_tokens"])
	}
}

func TestChatHeaders(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.RequireKey("caller-token")
			req := userReq("hi")
			req.Header = http.Header{"Authorization": {"Bearer caller-token"}, "X-Trace": {"t1"}}
			if _, err := newProvider(t, kind, srv).Chat(ctxT(t), req); err != nil {
				t.Fatalf("chat with forwarded auth: %v", err)
			}
			h := srv.ChatRequests()[0].Header
			if h.Get("X-Trace") != "t1" || h.Get("Authorization") != "Bearer caller-token" {
				t.Errorf("headers = %v", h)
			}
			if kind == "anthropic" && (h.Get("Anthropic-Version") != "2023-06-01" || h.Get("X-Api-Key") != "") {
				t.Errorf("anthropic headers = %v", h)
			}
		})
	}
}

func TestChatAPIKeyHeader(t *testing.T) {
	want := map[string][2]string{
		"openai":    {"Authorization", "Bearer " + testKey},
		"anthropic": {"X-Api-Key", testKey},
	}
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.RequireKey(testKey)
			if _, err := newProvider(t, kind, srv).Chat(ctxT(t), userReq("hi")); err != nil {
				t.Fatalf("chat: %v", err)
			}
			h := srv.ChatRequests()[0].Header
			if got := h.Get(want[kind][0]); got != want[kind][1] {
				t.Errorf("%s = %q", want[kind][0], got)
			}
			if !lastChat(t, srv).Stream {
				t.Error("request is not streaming")
			}
		})
	}
}

// openai.NewClient reads OPENAI_* variables by itself; nothing of them may
// reach a provider (nor ANTHROPIC_* through anthropic.NewClient): every
// value comes from the config.
func TestEnvironmentNeverLeaks(t *testing.T) {
	elsewhere := fakellm.New(t) // where the variables point
	for k, v := range map[string]string{
		"OPENAI_API_KEY": "sk-env-openai-key", "OPENAI_ADMIN_KEY": "sk-env-admin-key",
		"OPENAI_ORG_ID": "org-env", "OPENAI_PROJECT_ID": "proj-env",
		"OPENAI_BASE_URL": elsewhere.OpenAIBaseURL(), "OPENAI_CUSTOM_HEADERS": "X-Env-Leak: openai\nOpenAI-Beta: env",
		"ANTHROPIC_API_KEY": "sk-env-anthropic-key", "ANTHROPIC_AUTH_TOKEN": "env-token",
		"ANTHROPIC_BASE_URL": elsewhere.AnthropicBaseURL(), "ANTHROPIC_CUSTOM_HEADERS": "X-Env-Leak: anthropic",
	} {
		t.Setenv(k, v)
	}
	for _, kind := range providers {
		for _, key := range []string{"", testKey} {
			t.Run(fmt.Sprintf("%s key %q", kind, key), func(t *testing.T) {
				srv := fakellm.New(t)
				p := newProvider(t, kind, srv, func(c *llm.ProviderConfig) { c.APIKey = key })
				if _, err := p.Chat(ctxT(t), userReq("hi")); err != nil {
					t.Fatalf("chat: %v", err)
				}
				if err := p.Preflight(ctxT(t), "fake-model"); err != nil {
					t.Fatalf("preflight: %v", err)
				}
				if n := len(elsewhere.Requests()); n != 0 {
					t.Fatalf("%d requests went to the environment's base URL", n)
				}
				for _, r := range srv.Requests() {
					for name, vs := range r.Header {
						for _, v := range vs {
							if strings.Contains(v, "env") || strings.Contains(name, "Env") {
								t.Errorf("%s %s: header %s: %q from the environment", r.Method, r.Path, name, v)
							}
						}
					}
					auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
					if want := strings.TrimPrefix(auth, "Bearer "); want != key {
						t.Errorf("%s %s: credential %q, want %q", r.Method, r.Path, auth, key)
					}
				}
			})
		}
	}
}

func TestAnthropicBaseURLWithV1(t *testing.T) {
	srv := fakellm.New(t)
	p := newProvider(t, "anthropic", srv, func(c *llm.ProviderConfig) { c.BaseURL = srv.AnthropicBaseURL() + "/v1/" })
	if _, err := p.Chat(ctxT(t), userReq("hi")); err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := srv.ChatRequests()[0].Path; got != "/v1/messages" {
		t.Errorf("path = %q", got)
	}
}
