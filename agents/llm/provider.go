package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// New builds the provider named by cfg.Kind: "openai" or "anthropic". The
// built-in models are not configured providers; use NewPassthrough and
// NewPlayback (also reachable here as kinds "passthrough" and "playback").
func New(cfg ProviderConfig) (Provider, error) {
	switch cfg.Kind {
	case "openai":
		return NewOpenAI(cfg)
	case "anthropic":
		return NewAnthropic(cfg)
	case "passthrough":
		return NewPassthrough(), nil
	case "playback":
		return NewPlayback(), nil
	}
	return nil, fmt.Errorf("unknown provider kind %q (want openai or anthropic)", cfg.Kind)
}

// streamErr names a failure while reading a started stream; a context
// error wins over the read error it caused.
func streamErr(provider string, ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: stream interrupted: %w", provider, ctxErr)
	}
	if errors.Is(err, errNoFinish) || !isNetErr(err) {
		return fmt.Errorf("%s: %w", provider, err)
	}
	return fmt.Errorf("%s: connection lost mid-stream: %w", provider, err)
}

// checkBaseURL validates an http(s) base URL and strips trailing slashes.
func checkBaseURL(provider, raw string) (string, error) {
	if strings.Contains(raw, "@") {
		return "", fmt.Errorf("%s: base_url must not carry credentials", provider)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: base_url %q is not an http(s) URL", provider, raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// callTimeout bounds a whole call (retries and stream) when d > 0.
func callTimeout(d time.Duration) func(context.Context) (context.Context, context.CancelFunc) {
	return func(ctx context.Context) (context.Context, context.CancelFunc) {
		if d > 0 {
			return context.WithTimeout(ctx, d)
		}
		return context.WithCancel(ctx)
	}
}

// errHTML is returned when a 2xx answer is a web page: base_url points at
// something that is not the API.
var errHTML = errors.New("answer is an HTML page, not an event stream (is base_url right?)")

func isHTML(contentType string) bool { return strings.HasPrefix(contentType, "text/html") }

// staticHeaders is a provider's static headers as an http.Header, for
// redaction.
func staticHeaders(h map[string]string) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
	for k, v := range h {
		out.Set(k, v)
	}
	return out
}
