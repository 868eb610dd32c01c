package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// openAIProvider speaks the Chat Completions API of any OpenAI-compatible
// server (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM). The request body is the
// one openai-go's param types encode (openai_request.go), written directly
// (openai_body.go); transport, retries and the stream accumulator are ours.
// Nothing is read from OPENAI_* variables: the base URL and key come from
// the config only.
type openAIProvider struct {
	baseURL string // without trailing slash, e.g. https://api.openai.com/v1
	apiKey  string
	timeout func(context.Context) (context.Context, context.CancelFunc)
	tr      *transport
	tools   *toolJSON
}

// NewOpenAI returns a provider for an OpenAI-compatible Chat Completions
// server at cfg.BaseURL (which includes the /v1 prefix).
func NewOpenAI(cfg ProviderConfig) (Provider, error) {
	base, err := checkBaseURL("openai", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	return &openAIProvider{
		baseURL: base,
		apiKey:  cfg.APIKey,
		tools:   newToolJSON(encodeOpenAITool),
		timeout: callTimeout(cfg.Timeout),
		tr:      newTransport("openai", cfg),
	}, nil
}

func (p *openAIProvider) Name() string { return "openai" }

// Chat runs one streamed Chat Completions turn.
func (p *openAIProvider) Chat(ctx context.Context, req Request) (*Response, error) {
	ctx, cancel := p.timeout(ctx)
	defer cancel()
	body, err := openAIBody(req, p.tools)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	resp, err := p.tr.send(ctx, func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		p.auth(r.Header)
		setHeaders(r.Header, req.Header)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := readOpenAIBody(resp)
	if err != nil {
		return nil, p.tr.redactStream(streamErr("openai", ctx, err), req.Header)
	}
	return out, nil
}

// Preflight lists the server's models and checks that model is among them.
func (p *openAIProvider) Preflight(ctx context.Context, model string) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+"/models", nil)
	if err != nil {
		return fmt.Errorf("openai: preflight: %w", err)
	}
	p.auth(r.Header)
	body, err := p.tr.getOnce(r)
	if err != nil {
		return err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("openai: preflight: decoding model list: %w", err)
	}
	for _, m := range list.Data {
		if m.ID == model {
			return nil
		}
	}
	return fmt.Errorf("openai: model %q not listed by %s/models", model, p.baseURL)
}

func (p *openAIProvider) auth(h http.Header) {
	if p.apiKey != "" {
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
}
