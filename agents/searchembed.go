package agents

import (
	"context"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/metrics"
)

// searchEmbedder is tool_search.embeddings as the agent's index takes it:
// the provider's embeddings endpoint with the configured model, each
// request counted. It is built from the provider alone, so the request
// carries the provider's own key and static headers and nothing of any
// caller (the index's vectors serve every caller).
type searchEmbedder struct {
	agent, provider, model string
	embed                  llm.Embedder
	met                    *metrics.Metrics
	log                    *zap.Logger
}

// searchEmbeddings returns the agent's embedder and the vectors it shares
// with every index of the same provider endpoint and model (across
// reloads, when Deps.SearchVectors is set), or nil, nil without
// tool_search.embeddings (or, which validation refuses, with a provider
// that has no embeddings API).
func (a *Agent) searchEmbeddings() (toolsearch.Embedder, *toolsearch.Vectors) {
	e := a.Config.ToolSearch.Embeddings
	if e == nil {
		return nil, nil
	}
	d := a.set.deps
	emb, ok := d.Providers[e.Provider].(llm.Embedder)
	if !ok {
		a.log.Error("tool_search.embeddings: the provider has no embeddings API; ranking lexically", zap.String("provider", e.Provider))
		return nil, nil
	}
	var vecs *toolsearch.Vectors
	if pc := d.Config.Models.Providers[e.Provider]; pc != nil && d.SearchVectors != nil {
		vecs = d.SearchVectors.For(pc.BaseURL + " " + e.Model)
	}
	return &searchEmbedder{agent: a.Name, provider: e.Provider, model: e.Model, embed: emb, met: d.Metrics, log: a.log}, vecs
}

func (s *searchEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	vecs, err := s.embed.Embed(ctx, s.model, inputs)
	outcome := "ok"
	if err != nil {
		outcome = "error"
		s.log.Warn("tool search: embeddings failed; this search ranks lexically", zap.String("provider", s.provider),
			zap.String("model", s.model), zap.Int("inputs", len(inputs)), zap.Error(err))
	}
	if s.met != nil {
		s.met.SearchEmbeddings.WithLabelValues(s.agent, s.provider, s.model, outcome).Inc()
	}
	return vecs, err
}
