package llm

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAIProvider speaks the Chat Completions API of any OpenAI-compatible
// server (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM) through openai-go's
// client: its transport, retries and error type. The request body is the
// one openai-go's param types encode (openai_request.go); the stream is
// decoded by the SDK's ssestream decoder and folded by our accumulator
// (openai_stream.go), since the SDK's iterator and accumulator break on real
// servers (checked against openai-go v3.96.0).
type openAIProvider struct {
	baseURL string // without trailing slash, e.g. https://api.openai.com/v1
	apiKey  string
	static  http.Header // cfg.Headers, redacted from errors
	timeout func(context.Context) (context.Context, context.CancelFunc)
	client  openai.Client
	tools   *toolJSON
	noTopK  bool // the server refuses top_k: it is never sent
	// body encodes a request: openAIBody, or openAIBodySDK (SDKBody).
	body func(Request, *toolJSON) ([]byte, error)
}

// NewOpenAI returns a provider for an OpenAI-compatible Chat Completions
// server at cfg.BaseURL (which includes the /v1 prefix).
func NewOpenAI(cfg ProviderConfig) (Provider, error) {
	base, err := checkBaseURL("openai", cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	body := openAIBody
	if cfg.SDKBody {
		body = openAIBodySDK
	}
	return &openAIProvider{
		body:    body,
		baseURL: base,
		apiKey:  cfg.APIKey,
		static:  staticHeaders(cfg.Headers),
		tools:   newToolJSON(encodeOpenAITool),
		timeout: callTimeout(cfg.Timeout),
		client:  openai.NewClient(openAIOptions(base, cfg)...),
		noTopK:  cfg.DropTopK || RejectsTopK(base),
	}, nil
}

// RejectsTopK reports whether the OpenAI-compatible server at baseURL is
// OpenAI's own API, which answers 400 "Unrecognized request argument" to
// top_k (an extension of vLLM, llama.cpp, Ollama and LiteLLM).
func RejectsTopK(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "api.openai.com" || strings.HasSuffix(h, ".openai.azure.com")
}

// openAIOptions configures the client from cfg alone. openai.NewClient
// applies options read from OPENAI_* variables first (v3.96.0 has no public
// switch to stop it), so every one of them is overridden here: the base
// URL, both keys (an empty key clears the variable's), and the headers the
// variables add (OpenAI-Organization, OpenAI-Project and the names listed
// in OPENAI_CUSTOM_HEADERS) are deleted.
func openAIOptions(base string, cfg ProviderConfig) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(httpClient(cfg)),
		option.WithMaxRetries(maxRetries(cfg.MaxRetries)),
		option.WithMaxRetryDelay(maxRetryDelay),
	}
	for _, name := range openAIEnvHeaders() {
		opts = append(opts, option.WithHeaderDel(name))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return append(opts, option.WithAdminAPIKey(""), option.WithAPIKey(cfg.APIKey))
}

// openAIEnvHeaders lists the headers openai.NewClient takes from the
// environment, read the way it reads them.
func openAIEnvHeaders() []string {
	names := []string{"OpenAI-Organization", "OpenAI-Project"}
	for line := range strings.SplitSeq(os.Getenv("OPENAI_CUSTOM_HEADERS"), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) != "" {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}

func (p *openAIProvider) Name() string { return "openai" }

// Chat runs one streamed Chat Completions turn.
func (p *openAIProvider) Chat(ctx context.Context, req Request) (*Response, error) {
	ctx, cancel := p.timeout(ctx)
	defer cancel()
	if p.noTopK {
		req.Params.TopK = nil // req is this call's copy
	}
	if req.Schema != nil && req.Params.ResponseFormat == nil {
		req.Params.ResponseFormat = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": req.Schema.Name, "strict": true, "schema": req.Schema.Schema}}
	}
	body, err := p.body(req, p.tools)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	var a attempts
	opts := append(callHeaders(req.Header), option.WithHeader("Accept", "text/event-stream"),
		option.WithMiddleware(a.middleware))
	var resp *http.Response
	if err := p.client.Post(ctx, "chat/completions", body, &resp, opts...); err != nil {
		return nil, sdkError("openai", ctx, err, &a, p.apiKey, req.Header)
	}
	defer resp.Body.Close()
	out, err := readOpenAIBody(resp, req.OnText)
	if err != nil {
		return nil, redactStream(streamErr("openai", ctx, err), p.apiKey, req.Header)
	}
	return out, nil
}

// callHeaders sets the per-call headers (a forwarded Authorization replaces
// the key: the SDK then sends no key of its own).
func callHeaders(h http.Header) []option.RequestOption {
	var opts []option.RequestOption
	for k, vs := range h {
		opts = append(opts, option.WithHeaderDel(k))
		for _, v := range vs {
			opts = append(opts, option.WithHeaderAdd(k, v))
		}
	}
	return opts
}

// Preflight lists the server's models and checks that model is among them
// (model "": that the list is answered). It is a probe, repeated by its
// caller, so it is not retried.
func (p *openAIProvider) Preflight(ctx context.Context, model string) error {
	page, err := p.client.Models.List(ctx, option.WithMaxRetries(0))
	if err != nil {
		return sdkError("openai", ctx, err, nil, p.apiKey, p.static)
	}
	if model == "" {
		return nil
	}
	for _, m := range page.Data {
		if m.ID == model {
			return nil
		}
	}
	return fmt.Errorf("openai: model %q %w by %s/models", model, ErrModelNotListed, p.baseURL)
}
