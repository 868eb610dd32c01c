package llm_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

const testKey = "sk-test-secret-0123456789"

// providers lists both HTTP providers for table tests.
var providers = []string{"openai", "anthropic"}

// newProvider builds the kind of provider against srv.
func newProvider(t *testing.T, kind string, srv *fakellm.Server, edit ...func(*llm.ProviderConfig)) llm.Provider {
	t.Helper()
	cfg := llm.ProviderConfig{Kind: kind, APIKey: testKey, BaseURL: srv.OpenAIBaseURL()}
	if kind == "anthropic" {
		cfg.BaseURL = srv.AnthropicBaseURL()
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("new %s provider: %v", kind, err)
	}
	return p
}

func userReq(text string) llm.Request {
	return llm.Request{Model: "fake-model", Messages: []llm.Message{{Role: llm.RoleUser, Text: text}}}
}

// ctxT is a context bounded well below the test timeout.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// jsonEq compares two JSON texts semantically.
func jsonEq(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

// lastChat returns the decoded last chat request.
func lastChat(t *testing.T, srv *fakellm.Server) *fakellm.Chat {
	t.Helper()
	reqs := srv.ChatRequests()
	if len(reqs) == 0 {
		t.Fatal("no chat request reached the fake")
	}
	return reqs[len(reqs)-1].Chat
}
