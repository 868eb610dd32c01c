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

func TestPlayback(t *testing.T) {
	p := NewPlayback()
	req := Request{Params: Params{Playback: []string{"one", "two", "three"}}}
	var got []string
	for range 4 {
		resp, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Text)
	}
	if strings.Join(got, ",") != "one,two,three,one" {
		t.Errorf("answers = %v", got)
	}
	if resp, _ := NewPlayback().Chat(t.Context(), Request{}); resp.Text != playbackEmpty {
		t.Errorf("empty list answer = %q", resp.Text)
	}
	// Concurrent calls each take a distinct position.
	p = NewPlayback()
	req.Params.Playback = []string{"a", "b", "c", "d", "e", "f"}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			resp, _ := p.Chat(context.Background(), req)
			mu.Lock()
			seen[resp.Text]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != 6 {
		t.Errorf("concurrent answers = %v", seen)
	}
}
