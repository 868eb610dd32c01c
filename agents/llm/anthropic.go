package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// anthropicProvider speaks the Messages API, always streaming (the SDK
// refuses long non-streaming calls, and streaming lets ctx cancel promptly).
//
// Choice: anthropic-sdk-go's param types define the request body (they track
// the wire format; anthropicBody writes the same bytes directly and keeps
// them as its fallback), but transport, retries and SSE decoding are ours, shared
// with the OpenAI provider: one retry policy (Retry-After capped at 30 s,
// never after the first stream byte), one error format, and a decoder that
// tolerates unknown events instead of the SDK's iterator semantics.
type anthropicProvider struct {
	baseURL string // e.g. https://api.anthropic.com (a trailing /v1 is accepted)
	apiKey  string
	timeout func(context.Context) (context.Context, context.CancelFunc)
	tr      *transport
	tools   *toolJSON
}

const anthropicVersion = "2023-06-01"

// NewAnthropic returns a provider for the Anthropic Messages API at
// cfg.BaseURL (default https://api.anthropic.com when empty).
func NewAnthropic(cfg ProviderConfig) (Provider, error) {
	raw := cfg.BaseURL
	if strings.TrimSpace(raw) == "" {
		raw = "https://api.anthropic.com"
	}
	base, err := checkBaseURL("anthropic", raw)
	if err != nil {
		return nil, err
	}
	return &anthropicProvider{
		baseURL: strings.TrimSuffix(base, "/v1"),
		apiKey:  cfg.APIKey,
		tools:   newToolJSON(encodeAnthropicTool),
		timeout: callTimeout(cfg.Timeout),
		tr:      newTransport("anthropic", cfg),
	}, nil
}

func (p *anthropicProvider) Name() string { return "anthropic" }

// Chat runs one streamed Messages turn.
func (p *anthropicProvider) Chat(ctx context.Context, req Request) (*Response, error) {
	ctx, cancel := p.timeout(ctx)
	defer cancel()
	body, err := anthropicBody(req, p.tools)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	resp, err := p.tr.send(ctx, func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, p.baseURL+"/v1/messages", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "text/event-stream")
		p.auth(r.Header, req.Header)
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if isHTML(resp.Header.Get("Content-Type")) {
		return nil, fmt.Errorf("anthropic: %w", errHTML)
	}
	out, err := readAnthropicStream(resp.Body)
	if err != nil {
		return nil, p.tr.redactStream(streamErr("anthropic", ctx, err), req.Header)
	}
	return out, nil
}

// Preflight fetches the model's metadata; 404 means the model is unknown.
func (p *anthropicProvider) Preflight(ctx context.Context, model string) error {
	u := p.baseURL + "/v1/models/" + url.PathEscape(model)
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("anthropic: preflight: %w", err)
	}
	p.auth(r.Header, nil)
	body, err := p.tr.getOnce(r)
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			return fmt.Errorf("anthropic: model %q not listed: %w", model, err)
		}
		return err
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("anthropic: preflight: decoding model: %w", err)
	}
	return nil
}

// auth sets the version and key headers, then the per-call headers. A
// forwarded Authorization (or x-api-key) replaces the configured key.
func (p *anthropicProvider) auth(h, extra http.Header) {
	h.Set("anthropic-version", anthropicVersion)
	if p.apiKey != "" && extra.Get("Authorization") == "" && extra.Get("X-Api-Key") == "" {
		h.Set("X-Api-Key", p.apiKey)
	}
	setHeaders(h, extra)
}
