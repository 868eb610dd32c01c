package agents

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestSearchEmbedderCountsRequests: every embeddings request of tool search
// is counted by outcome, and carries the provider's own key.
func TestSearchEmbedderCountsRequests(t *testing.T) {
	srv := fakellm.New(t)
	srv.RequireKey("provider-key")
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: srv.OpenAIBaseURL(), APIKey: "provider-key", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	met := metrics.New("test")
	e := &searchEmbedder{agent: "tb", provider: "local", model: "embed-model", embed: p.(llm.Embedder), met: met, log: zap.NewNop()}
	count := func(outcome string) float64 {
		return testutil.ToFloat64(met.SearchEmbeddings.WithLabelValues("tb", "local", "embed-model", outcome))
	}
	if _, err := e.Embed(t.Context(), []string{"list pods", "read a file"}); err != nil {
		t.Fatal(err)
	}
	srv.FailEmbeddings(http.StatusInternalServerError)
	if _, err := e.Embed(t.Context(), []string{"list pods"}); err == nil {
		t.Fatal("a failing provider gave no error")
	}
	if ok, failed := count("ok"), count("error"); ok != 1 || failed != 1 {
		t.Errorf("counted ok %v, error %v; want 1 and 1", ok, failed)
	}
	for _, r := range srv.EmbeddingRequests() {
		if r.Model != "embed-model" {
			t.Errorf("model %q", r.Model)
		}
	}
	for _, r := range srv.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer provider-key" {
			t.Errorf("Authorization %q, want the provider's own key", got)
		}
	}
}
