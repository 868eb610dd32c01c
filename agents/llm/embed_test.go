package llm_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

func TestOpenAIEmbed(t *testing.T) {
	srv := fakellm.New(t)
	srv.RequireKey("provider-key")
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: srv.OpenAIBaseURL(), APIKey: "provider-key", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e, ok := p.(llm.Embedder)
	if !ok {
		t.Fatal("the openai provider is no Embedder")
	}
	vecs, err := e.Embed(t.Context(), "embed-model", []string{"list pods", "read a file"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != fakellm.EmbedDims || len(vecs[1]) != fakellm.EmbedDims {
		t.Fatalf("got %d vectors", len(vecs))
	}
	reqs := srv.EmbeddingRequests()
	if len(reqs) != 1 || reqs[0].Model != "embed-model" || len(reqs[0].Inputs) != 2 {
		t.Fatalf("requests: %+v", reqs)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer provider-key" {
		t.Errorf("Authorization %q, want the provider's key", got)
	}

	srv.FailEmbeddings(http.StatusServiceUnavailable)
	_, err = e.Embed(t.Context(), "embed-model", []string{"x"})
	var he *llm.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable {
		t.Errorf("err = %v, want HTTP 503", err)
	}
}
