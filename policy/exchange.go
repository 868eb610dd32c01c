package policy

// Token exchange (RFC 8693): the credential a downstream server
// receives for a JWT caller when the server sets token_exchange. The
// caller's access token is the subject token; the identity provider's
// answer, a token meant for the server, is what travels. The caller's own
// token never does (MCP 2026-07-28 forbids passing it on).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Token types and the grant of RFC 8693.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// ExchangeSpec is one server's token_exchange.
type ExchangeSpec struct {
	Server                 string
	TokenURL               string
	ClientID, ClientSecret string
	Audience, Resource     string
	Scopes                 []string
}

// key identifies an exchanged token: the spec it was asked with and the
// subject token (by digest: the cache holds no caller token).
func (s ExchangeSpec) key(subject string) [sha256.Size]byte {
	return sha256.Sum256([]byte(strings.Join([]string{s.Server, s.TokenURL, s.ClientID, s.Audience, s.Resource,
		strings.Join(s.Scopes, " "), subject}, "\x00")))
}

// Exchanger performs and caches token exchanges. It is safe for concurrent
// use and lives as long as the gateway, so that a reload keeps its tokens.
type Exchanger struct {
	Client *http.Client // nil: a client with a 10 s timeout
	// Observe is told of each token asked for: outcome ok, cached or error.
	Observe func(server, outcome string)

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[[sha256.Size]byte]exchanged
}

type exchanged struct {
	token   string
	expires time.Time // when it stops being handed out (30 s before it expires)
}

// Cache bounds: entries live until 30 s before their token expires; past
// maxExchanged entries, expired ones go, then arbitrary ones.
const (
	maxExchanged   = 10000
	exchangeMargin = 30 * time.Second
)

// Token returns a token for spec's server on behalf of subject (the
// caller's access token), from the cache or from the token endpoint.
// Errors name the server and the endpoint's error code, never a token.
func (e *Exchanger) Token(ctx context.Context, spec ExchangeSpec, subject string) (string, error) {
	k := spec.key(subject)
	e.mu.Lock()
	if c, ok := e.cache[k]; ok && time.Now().Before(c.expires) {
		e.mu.Unlock()
		e.observe(spec.Server, "cached")
		return c.token, nil
	}
	e.mu.Unlock()
	v, err, _ := e.flight.Do(string(k[:]), func() (any, error) {
		tok, ttl, err := e.exchange(ctx, spec, subject)
		if err == nil && ttl > exchangeMargin {
			e.store(k, exchanged{token: tok, expires: time.Now().Add(ttl - exchangeMargin)})
		}
		return tok, err
	})
	if err != nil {
		e.observe(spec.Server, "error")
		return "", err
	}
	e.observe(spec.Server, "ok")
	return v.(string), nil
}

func (e *Exchanger) observe(server, outcome string) {
	if e.Observe != nil {
		e.Observe(server, outcome)
	}
}

func (e *Exchanger) store(k [sha256.Size]byte, c exchanged) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cache == nil {
		e.cache = map[[sha256.Size]byte]exchanged{}
	}
	now := time.Now()
	makeRoom(e.cache, maxExchanged, func(old exchanged) bool { return now.After(old.expires) })
	e.cache[k] = c
}

// exchange asks the token endpoint (RFC 8693 §2.1), authenticating the
// gateway with client_secret_basic (RFC 6749 §2.3.1).
func (e *Exchanger) exchange(ctx context.Context, spec ExchangeSpec, subject string) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {tokenTypeAccess},
		"requested_token_type": {tokenTypeAccess},
	}
	if spec.Audience != "" {
		form.Set("audience", spec.Audience)
	}
	if spec.Resource != "" {
		form.Set("resource", spec.Resource)
	}
	if len(spec.Scopes) > 0 {
		form.Set("scope", strings.Join(spec.Scopes, " "))
	}
	fail := func(format string, args ...any) (string, time.Duration, error) {
		return "", 0, fmt.Errorf("token exchange for server %s at %s: %s", spec.Server, spec.TokenURL, fmt.Sprintf(format, args...))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, spec.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(spec.ClientID), url.QueryEscape(spec.ClientSecret))
	client := e.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is in the message already
		}
		return fail("%v", err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		TokenType       string `json:"token_type"`
		ExpiresIn       int64  `json:"expires_in"`
		Error           string `json:"error"`
		Description     string `json:"error_description"`
	}
	decodeErr := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	switch {
	case resp.StatusCode != http.StatusOK && body.Error != "":
		return fail("HTTP %d %s: %s", resp.StatusCode, clip(body.Error, 64), clip(redact(body.Description, subject), 200))
	case resp.StatusCode != http.StatusOK:
		return fail("HTTP %d", resp.StatusCode)
	case decodeErr != nil:
		return fail("the answer is not JSON: %v", decodeErr)
	case body.AccessToken == "":
		return fail("the answer has no access_token")
	case body.TokenType != "" && !strings.EqualFold(body.TokenType, "Bearer") && !strings.EqualFold(body.TokenType, "N_A"):
		return fail("token_type %q is not Bearer", clip(body.TokenType, 32))
	}
	return body.AccessToken, time.Duration(body.ExpiresIn) * time.Second, nil
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "<redacted>")
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
