package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Both providers share this transport: plain net/http with our own retry
// loop. The SDKs' transports retry on their own schedule (and openai-go reads
// OPENAI_* from the environment); we need Retry-After capped at 30 s,
// retry-after-ms, "never after the first stream byte" and one error format, so
// the SDKs are used for request types only.

const (
	defaultMaxRetries = 2
	maxErrorBody      = 64 << 10 // bytes of an error body we read
	maxMessageLen     = 512      // characters of a provider message we keep
)

// HTTPError is a non-2xx answer from a provider.
type HTTPError struct {
	Provider string
	Status   int
	Message  string // the provider's own message, secrets redacted
	// RetryAfter is the delay the provider asked for (0 = none given).
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Provider, e.Status)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
}

// connError is a failure to get any response (dial, TLS, reset before headers).
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// IsRetryable reports whether err is worth another attempt: HTTP 408, 409,
// 429 and 5xx, and connection failures before any response. Errors from a
// stream that already started are not retryable.
func IsRetryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status == http.StatusRequestTimeout || he.Status == http.StatusConflict ||
			he.Status == http.StatusTooManyRequests || he.Status >= 500
	}
	var ce *connError
	return errors.As(err, &ce)
}

// transport sends requests for one provider.
type transport struct {
	provider   string // "openai" or "anthropic", prefixes every error
	client     *http.Client
	maxRetries int
	apiKey     string // only to redact it from provider messages
	backoff    func(attempt int, retryAfter time.Duration) time.Duration
}

func newTransport(provider string, cfg ProviderConfig) *transport {
	client := cfg.HTTPClient
	if client == nil {
		client = sharedHTTPClient
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = defaultMaxRetries
	case retries < 0:
		retries = 0
	}
	return &transport{provider: provider, client: client, maxRetries: retries,
		apiKey: cfg.APIKey, backoff: backoffDelay}
}

// sharedHTTPClient is the client of every provider built without one. One
// connection pool for the process: providers are rebuilt on every reload,
// and a pool per provider left its idle connections open for
// IdleConnTimeout after the config that made it was retired (with reloads
// every few seconds, hundreds of file descriptors). Sharing also keeps
// connections to a provider across reloads. Credentials travel per request,
// never per connection, so sharing mixes nothing.
var sharedHTTPClient = defaultHTTPClient()

// defaultHTTPClient has no overall timeout (it would cut long streams); the
// caller's context bounds each call.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// send issues the request built by build, retrying retryable failures before
// a response body is handed out. The caller owns the returned body.
func (t *transport) send(ctx context.Context, build func(context.Context) (*http.Request, error)) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.attempt(ctx, build)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", t.provider, ctx.Err())
		}
		if attempt >= t.maxRetries || !IsRetryable(err) {
			return nil, err
		}
		var retryAfter time.Duration
		var he *HTTPError
		if errors.As(err, &he) {
			retryAfter = he.RetryAfter
		}
		if werr := sleepCtx(ctx, t.backoff(attempt, retryAfter)); werr != nil {
			return nil, fmt.Errorf("%s: waiting to retry (%v): %w", t.provider, err, werr)
		}
	}
}

// attempt performs one round trip; non-2xx answers become *HTTPError.
func (t *transport) attempt(ctx context.Context, build func(context.Context) (*http.Request, error)) (*http.Response, error) {
	req, err := build(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", t.provider, err)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.provider, &connError{err: redactErr(err, t.apiKey)})
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, &HTTPError{
		Provider:   t.provider,
		Status:     resp.StatusCode,
		Message:    redact(providerMessage(body), t.apiKey, req.Header, nil),
		RetryAfter: retryAfter(resp.Header, time.Now()),
	}
}

// providerMessage extracts the human message from an error body in the
// OpenAI ({"error":{"message"}}), Anthropic ({"type":"error","error":{...}})
// or a plain ({"message"}, {"error":"..."}, text) shape.
func providerMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		msg = errorText(v.Error)
		if msg == "" {
			msg = v.Message
		}
		if msg == "" {
			msg = v.Detail
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMessageLen {
		msg = msg[:maxMessageLen] + "…"
	}
	return msg
}

// errorText reads an "error" member that is a string or an object with a
// message; null and absent give "".
func errorText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		switch {
		case obj.Message != "":
			return obj.Message
		case obj.Type != "":
			return obj.Type
		case obj.Code != nil:
			return fmt.Sprint(obj.Code)
		}
	}
	return string(raw)
}

// redact removes the API key and any forwarded credential from s, and
// every value of extra (the call's own headers), longest first: a short
// secret that is part of a longer one would otherwise leave the rest.
func redact(s, apiKey string, h, extra http.Header) string {
	secrets := []string{apiKey}
	for _, name := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		for _, v := range h.Values(name) {
			secrets = append(secrets, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				secrets = append(secrets, tok)
			}
		}
	}
	for _, vs := range extra {
		secrets = append(secrets, vs...)
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "<redacted>")
		}
	}
	return s
}

// redactErr keeps err's chain but scrubs the key from its text if present.
func redactErr(err error, apiKey string) error {
	if apiKey == "" || !strings.Contains(err.Error(), apiKey) {
		return err
	}
	return &redactedError{msg: redact(err.Error(), apiKey, nil, nil), err: err}
}

// redactStream is redactErr for an error read from a 2xx answer (an error
// event, a malformed chunk quoted back): its text is the provider's, which
// may echo what it was sent. The key and every value of extra (the call's
// own headers: a forwarded credential) are taken out.
func (t *transport) redactStream(err error, extra http.Header) error {
	msg := err.Error()
	out := redact(msg, t.apiKey, extra, extra)
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// isNetErr reports a network-level failure (used to label stream errors).
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// setHeaders applies the per-call headers; they replace same-named ones.
func setHeaders(dst, extra http.Header) {
	for k, vs := range extra {
		dst.Del(k)
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}
