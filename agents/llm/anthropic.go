package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicProvider speaks the Messages API through anthropic-sdk-go's
// client (its transport, retries and error type), always streaming (the SDK
// refuses long non-streaming calls, and streaming lets ctx cancel promptly).
// The request body is the one the SDK's param types encode
// (anthropic_request.go); the stream is decoded by the SDK's ssestream
// decoder and folded by our accumulator (anthropic_stream.go), read by the
// loop the OpenAI provider uses (stream.go): it tolerates unknown events
// and keeps the maximum of the cumulative usage.
type anthropicProvider struct {
	apiKey  string
	static  http.Header // cfg.Headers, redacted from errors
	timeout func(context.Context) (context.Context, context.CancelFunc)
	client  anthropic.Client
}

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
	// WithoutEnvironmentDefaults: nothing from ANTHROPIC_* variables or
	// profile files; the base URL and key come from the config only.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(strings.TrimSuffix(base, "/v1")),
		option.WithHTTPClient(httpClient(cfg)),
		option.WithMaxRetries(maxRetries(cfg.MaxRetries)),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &anthropicProvider{
		apiKey:  cfg.APIKey,
		static:  staticHeaders(cfg.Headers),
		timeout: callTimeout(cfg.Timeout),
		client:  anthropic.NewClient(opts...),
	}, nil
}

func (p *anthropicProvider) Name() string { return "anthropic" }

// Chat runs one streamed Messages turn.
func (p *anthropicProvider) Chat(ctx context.Context, req Request) (*Response, error) {
	ctx, cancel := p.timeout(ctx)
	defer cancel()
	body, err := anthropicBody(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	var a attempts
	opts := append(anthropicHeaders(req.Header), option.WithHeader("Accept", "text/event-stream"),
		option.WithMiddleware(a.middleware))
	var resp *http.Response
	if err := p.client.Post(ctx, "v1/messages", body, &resp, opts...); err != nil {
		return nil, sdkError("anthropic", ctx, err, &a, p.apiKey, req.Header)
	}
	defer resp.Body.Close()
	if isHTML(resp.Header.Get("Content-Type")) {
		return nil, fmt.Errorf("anthropic: %w", errHTML)
	}
	out, err := readAnthropicStream(resp, req.OnText)
	if err != nil {
		return nil, redactStream(streamErr("anthropic", ctx, err), p.apiKey, req.Header)
	}
	return out, nil
}

// anthropicHeaders sets the per-call headers. A forwarded Authorization (or
// x-api-key) replaces the configured key.
func anthropicHeaders(h http.Header) []option.RequestOption {
	var opts []option.RequestOption
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
		opts = append(opts, option.WithHeaderDel("X-Api-Key"))
	}
	for k, vs := range h {
		opts = append(opts, option.WithHeaderDel(k))
		for _, v := range vs {
			opts = append(opts, option.WithHeaderAdd(k, v))
		}
	}
	return opts
}

// Preflight fetches the model's metadata; 404 means the model is unknown.
// With model "" it lists one model: the provider answers and takes the key.
// It is a probe, repeated by its caller, so it is not retried.
func (p *anthropicProvider) Preflight(ctx context.Context, model string) error {
	if model == "" {
		_, err := p.client.Models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1)}, option.WithMaxRetries(0))
		if err != nil {
			return sdkError("anthropic", ctx, err, nil, p.apiKey, p.static)
		}
		return nil
	}
	_, err := p.client.Models.Get(ctx, model, anthropic.ModelGetParams{}, option.WithMaxRetries(0))
	if err == nil {
		return nil
	}
	err = sdkError("anthropic", ctx, err, nil, p.apiKey, p.static)
	var he *HTTPError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return fmt.Errorf("anthropic: model %q %w: %w", model, ErrModelNotListed, err)
	}
	return err
}
