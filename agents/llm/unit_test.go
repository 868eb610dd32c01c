package llm

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestProviderMessage(t *testing.T) {
	tests := map[string]string{
		`{"error":{"message":"bad key","type":"x"}}`:                            "bad key",
		`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`: "busy",
		`{"error":"plain"}`:              "plain",
		`{"detail":"fastapi style"}`:     "fastapi style",
		"<html>\n  Bad   Gateway</html>": "<html> Bad Gateway</html>",
		strings.Repeat("x", 2000):        strings.Repeat("x", maxMessageLen) + "…",
	}
	for body, want := range tests {
		if got := providerMessage([]byte(body)); got != want {
			t.Errorf("providerMessage(%.40q) = %q, want %q", body, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer fwd-token-123"}}
	got := redact("key sk-abc123 and fwd-token-123", "sk-abc123", h, nil)
	if got != "key <redacted> and <redacted>" {
		t.Errorf("redact = %q", got)
	}
	// The longest first: the key is a part of the forwarded value.
	extra := http.Header{"X-Forwarded-Key": {"sk-abc123-tenant-7"}}
	if got := redact("got sk-abc123-tenant-7", "sk-abc123", nil, extra); got != "got <redacted>" {
		t.Errorf("redact with a secret inside another = %q", got)
	}
}

func TestNewProviders(t *testing.T) {
	tests := []struct {
		cfg     ProviderConfig
		name    string
		wantErr string
	}{
		{ProviderConfig{Kind: "openai", BaseURL: "http://localhost:8000/v1/"}, "openai", ""},
		{ProviderConfig{Kind: "anthropic"}, "anthropic", ""},
		{ProviderConfig{Kind: "anthropic", BaseURL: "https://api.anthropic.com/v1"}, "anthropic", ""},
		{ProviderConfig{Kind: "passthrough"}, "builtin", ""},
		{ProviderConfig{Kind: "openai", BaseURL: "ftp://x"}, "", "not an http(s) URL"},
		{ProviderConfig{Kind: "openai", BaseURL: ""}, "", "not an http(s) URL"},
		{ProviderConfig{Kind: "openai", BaseURL: "https://user:pw@host/v1"}, "", "must not carry credentials"},
		{ProviderConfig{Kind: "gemini"}, "", `unknown provider kind "gemini"`},
	}
	for _, tc := range tests {
		p, err := New(tc.cfg)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "pw@") {
				t.Errorf("New(%+v) err = %v, want %q", tc.cfg, err, tc.wantErr)
			}
			continue
		}
		if err != nil || p.Name() != tc.name {
			t.Errorf("New(%+v) = %v, %v", tc.cfg, p, err)
		}
	}
}

func TestPassthrough(t *testing.T) {
	p := NewPassthrough()
	resp, err := p.Chat(t.Context(), Request{Messages: []Message{
		{Role: RoleUser, Text: "first"}, {Role: RoleAssistant, Text: "x"},
		{Role: RoleUser, Text: "last one"}, {Role: RoleTool, Text: "tool"},
	}})
	if err != nil || resp.Text != "last one" || resp.FinishReason != "stop" || resp.Usage != (Usage{}) || resp.ToolCalls != nil {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
	if p.Name() != "builtin" || p.Preflight(t.Context(), "anything") != nil {
		t.Error("name or preflight")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Chat(ctx, Request{}); err == nil {
		t.Error("cancelled ctx accepted")
	}
}

// playback's answer follows the request's assistant turns, never a count
// kept across calls: the same request gets the same answer, whoever sends
// it and however many were sent before.
func TestPlayback(t *testing.T) {
	p := NewPlayback()
	list := []string{"one", "two", "three"}
	turns := func(n int) []Message {
		var msgs []Message
		for range n {
			msgs = append(msgs, Message{Role: RoleUser, Text: "q"}, Message{Role: RoleAssistant, Text: "a"})
		}
		return append(msgs, Message{Role: RoleUser, Text: "q"})
	}
	for n, want := range []string{"one", "two", "three", "one"} {
		for range 2 { // asked twice: the same answer
			resp, err := p.Chat(t.Context(), Request{Messages: turns(n), Params: Params{Playback: list}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != want {
				t.Errorf("after %d assistant turns: %q, want %q", n, resp.Text, want)
			}
		}
	}
	if resp, _ := NewPlayback().Chat(t.Context(), Request{}); resp.Text != playbackEmpty {
		t.Errorf("empty list answer = %q", resp.Text)
	}
	// Concurrent calls without history each get the first answer.
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if resp, _ := p.Chat(context.Background(), Request{Messages: turns(0), Params: Params{Playback: list}}); resp.Text != "one" {
				t.Errorf("a concurrent first call: %q", resp.Text)
			}
		})
	}
	wg.Wait()
}
