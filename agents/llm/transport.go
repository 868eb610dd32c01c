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

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// Both providers send through their SDK clients (openai.NewClient,
// anthropic.NewClient): the SDKs do the transport on our *http.Client, the
// retries (408, 409, 429, 5xx and connection failures, 2 by default,
// honouring retry-after-ms and Retry-After, never once a response has been
// handed out, so never after the first stream byte) and the error types.
// This file maps their errors to HTTPError and keeps secrets out of every
// error text. The stream bodies are read with the SDKs' event decoders and
// this package's accumulators (stream.go), not with the SDKs' iterators and
// accumulator.

const (
	defaultMaxRetries = 2
	maxErrorBody      = 64 << 10 // bytes of an error body we read
	maxMessageLen     = 512      // characters of a provider message we keep
	// maxRetryDelay bounds the wait before a retry; an openai provider that
	// asks for longer is not retried (the SDK's WithMaxRetryDelay).
	maxRetryDelay = 30 * time.Second
)

// HTTPError is a non-2xx answer from a provider, mapped from the SDK's
// *openai.Error or *anthropic.Error (which are not kept: their texts quote
// the provider's answer unredacted).
type HTTPError struct {
	Provider string
	Status   int
	Message  string // the provider's own message, secrets redacted
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: HTTP %d", e.Provider, e.Status)
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
}

// retryableStatus reports the statuses the SDKs retry: 408, 409, 429, 5xx.
func retryableStatus(s int) bool {
	return s == http.StatusRequestTimeout || s == http.StatusConflict ||
		s == http.StatusTooManyRequests || s >= 500
}

// maxRetries maps ProviderConfig.MaxRetries to the SDKs' option.
func maxRetries(n int) int {
	switch {
	case n == 0:
		return defaultMaxRetries
	case n < 0:
		return 0
	}
	return n
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

func httpClient(cfg ProviderConfig) *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return sharedHTTPClient
}

// attempts records the status of the last answer of one call, so that a
// call cancelled while the SDK waits to retry says what it was waiting for.
// It is the SDKs' middleware shape (option.Middleware of either SDK).
type attempts struct{ status int }

func (a *attempts) middleware(r *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(r)
	if res != nil {
		a.status = res.StatusCode
	}
	return res, err
}

// sdkError maps an error returned by an SDK client call. extra are the
// call's own headers (a forwarded credential), redacted with apiKey.
func sdkError(provider string, ctx context.Context, err error, a *attempts, apiKey string, extra http.Header) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if a != nil && retryableStatus(a.status) {
			return fmt.Errorf("%s: waiting to retry (HTTP %d): %w", provider, a.status, ctxErr)
		}
		return fmt.Errorf("%s: %w", provider, ctxErr)
	}
	var res *http.Response
	var oe *openai.Error
	var ae *anthropic.Error
	switch {
	case errors.As(err, &oe):
		res = oe.Response
	case errors.As(err, &ae):
		res = ae.Response
	default: // no response: dial, TLS, a reset before the headers
		return fmt.Errorf("%s: %w", provider, redactErr(err, apiKey))
	}
	var body []byte
	if res.Body != nil { // the SDKs leave the read error body in place
		body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	}
	return &HTTPError{
		Provider: provider,
		Status:   res.StatusCode,
		Message:  redact(providerMessage(body), apiKey, extra, extra),
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
func redactStream(err error, apiKey string, extra http.Header) error {
	msg := err.Error()
	out := redact(msg, apiKey, extra, extra)
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
