package llm

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
)

// Embedder is a provider with an embeddings API (OpenAI's POST
// /embeddings, which vLLM, Ollama, llama.cpp and LiteLLM also serve). The
// request carries the provider's own key and static headers only: no
// caller's header is ever forwarded, since the vectors are shared by every
// caller. Anthropic has no embeddings API.
type Embedder interface {
	// Embed returns one vector per input, in order, from one request.
	Embed(ctx context.Context, model string, inputs []string) ([][]float32, error)
}

var _ Embedder = (*openAIProvider)(nil)

// Embed asks the server's /embeddings for inputs' vectors (as floats),
// retried like a chat request on 429, 5xx and connection errors.
func (p *openAIProvider) Embed(ctx context.Context, model string, inputs []string) ([][]float32, error) {
	ctx, cancel := p.timeout(ctx)
	defer cancel()
	res, err := p.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          openai.EmbeddingModel(model),
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		return nil, sdkError("openai", ctx, err, nil, p.apiKey, p.static)
	}
	out := make([][]float32, len(inputs))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("openai: embeddings: index %d out of place for %d inputs", d.Index, len(inputs))
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("openai: embeddings: no vector for input %d of %d", i, len(inputs))
		}
	}
	return out, nil
}
