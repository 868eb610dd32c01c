package policy

// Callers with an identity provider's access token (auth.mode jwt): the gateway is an OAuth 2.1 resource server. Signatures, claims
// and their time checks are github.com/golang-jwt/jwt/v5's; the issuer's
// keys are github.com/MicahParks/keyfunc/v3 over jwkset, which caches them,
// refreshes them periodically, refetches on an unknown kid (rate-limited
// here) and keeps the last good set when a refresh fails or answers
// garbage. What this file adds: finding the JWKS through the issuer's
// discovery document, the audience that defaults to the agent's canonical
// URL, scopes per agent, and bounded reasons for every refusal.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Reasons a JWT is refused (pallasgw_auth_failures_total{reason}).
const (
	AuthExpired         = "expired"
	AuthNotYetValid     = "not_yet_valid"
	AuthWrongIssuer     = "wrong_issuer"
	AuthWrongAudience   = "wrong_audience"
	AuthBadSignature    = "bad_signature"
	AuthUnknownKey      = "unknown_kid"
	AuthDisallowedAlg   = "disallowed_alg"
	AuthMalformed       = "malformed"
	AuthOversized       = "oversized"
	AuthKeysUnavailable = "jwks_unavailable"
	AuthMissingClaim    = "missing_identity_claim"
	AuthMissingScope    = "insufficient_scope"
)

// maxTokenBytes bounds a bearer token: larger ones are refused unread.
const maxTokenBytes = 8 << 10

// JWTOptions configure a JWTVerifier (auth.jwt).
type JWTOptions struct {
	Issuer        string
	JWKSURL       string   // "": from the issuer's discovery document
	Audiences     []string // "": the resource the request is for
	Algorithms    []string // asymmetric only (config validation)
	ClockSkew     time.Duration
	IdentityClaim string
	Scopes        map[string][]string // agent glob -> required scopes
	// Client fetches discovery documents and key sets (nil: a client with
	// a 5 s timeout).
	Client *http.Client
	// OnKeyError is told of every failed discovery or key-set fetch (the
	// error names the URL, never a token).
	OnKeyError func(error)
}

// JWTVerifier checks access tokens. It is safe for concurrent use; its key
// source runs until the context given to NewJWTVerifier ends.
type JWTVerifier struct {
	opts   JWTOptions
	scopes []scopeRule

	ready chan struct{} // closed once keys were looked for the first time
	mu    sync.RWMutex
	keys  keyfunc.Keyfunc // nil until the key set is known

	// verified remembers tokens whose signature and claims were checked,
	// by digest of token and resource, for at most verifiedTTL and never
	// past their exp: a client sends the same token on every request, and
	// the signature check is nearly all of a verification's cost (RS256
	// 35-50 µs on the development machine, ES256 75-150 µs).
	vmu      sync.Mutex
	verified map[[sha256.Size]byte]verifiedToken
}

type verifiedToken struct {
	claims Claims
	id     string
	until  time.Time
}

// verifiedTTL bounds how long a verified token is trusted without a new
// check (a key the issuer withdraws stops working within it); maxVerified
// bounds the cache.
const (
	verifiedTTL = time.Minute
	maxVerified = 10000
)

type scopeRule struct {
	agents Globs
	scopes []string
}

// ErrNoKeys marks a key error met before any key set was found: no JWT
// is accepted until one is (later failures keep the last good keys).
var ErrNoKeys = errors.New("no key set yet")

// keyWait bounds how long a request waits for the first key set.
const keyWait = 5 * time.Second

// NewJWTVerifier starts finding the issuer's keys in the background
// (discovery, then the key set, retried with backoff until found) and
// returns at once: a snapshot is never held up by an identity provider
// that is down, and requests meanwhile are refused as jwks_unavailable.
func NewJWTVerifier(ctx context.Context, o JWTOptions) (*JWTVerifier, error) {
	v := &JWTVerifier{opts: o, ready: make(chan struct{}), verified: map[[sha256.Size]byte]verifiedToken{}}
	for glob, scopes := range o.Scopes {
		g, err := CompileGlobs([]string{glob})
		if err != nil {
			return nil, fmt.Errorf("auth.jwt.scopes: %w", err)
		}
		v.scopes = append(v.scopes, scopeRule{agents: g, scopes: scopes})
	}
	if v.opts.Client == nil {
		v.opts.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if v.opts.OnKeyError == nil {
		v.opts.OnKeyError = func(error) {}
	}
	go v.findKeys(ctx)
	return v, nil
}

// findKeys looks up the key set until it has one or ctx ends.
func (v *JWTVerifier) findKeys(ctx context.Context) {
	defer func() {
		select {
		case <-v.ready:
		default:
			close(v.ready)
		}
	}()
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		url := v.opts.JWKSURL
		var err error
		if url == "" {
			url, err = v.discover(ctx)
		}
		if err == nil {
			var k keyfunc.Keyfunc
			if k, err = v.newKeyfunc(ctx, url); err == nil {
				v.mu.Lock()
				v.keys = k
				v.mu.Unlock()
				return
			}
		}
		v.opts.OnKeyError(fmt.Errorf("%w: %w", ErrNoKeys, err))
		select {
		case <-v.ready:
		default:
			close(v.ready) // requests stop waiting; they are refused until keys arrive
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// discover reads the JWKS URL from the issuer's OpenID Connect or OAuth 2.0
// authorization server metadata.
func (v *JWTVerifier) discover(ctx context.Context) (string, error) {
	base := strings.TrimSuffix(v.opts.Issuer, "/")
	var errs []error
	for _, u := range []string{base + "/.well-known/openid-configuration", base + "/.well-known/oauth-authorization-server"} {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := v.getJSON(ctx, u, &doc); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSuffix(doc.Issuer, "/") != base || doc.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s: issuer %q or jwks_uri does not match the configured issuer", u, doc.Issuer))
			continue
		}
		return doc.JWKSURI, nil
	}
	return "", fmt.Errorf("auth.jwt: discovery: %w", errors.Join(errs...))
}

func (v *JWTVerifier) getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

// newKeyfunc fetches the key set once (failing when it cannot), then keeps
// it fresh: every 10 minutes, and on an unknown kid at most once per 30 s.
func (v *JWTVerifier) newKeyfunc(ctx context.Context, url string) (keyfunc.Keyfunc, error) {
	strict := false
	return keyfunc.NewDefaultOverrideCtx(ctx, []string{url}, keyfunc.Override{
		Client:                    &http.Client{Timeout: v.opts.Client.Timeout, Transport: limitedBody{v.opts.Client.Transport}},
		HTTPTimeout:               5 * time.Second,
		NoErrorReturnFirstHTTPReq: &strict,
		RefreshInterval:           10 * time.Minute,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(30*time.Second), 1),
		// The wait bounds the refetch itself too (jwkset fetches with the
		// same context); over the limit the wait would pass it, so the
		// limiter refuses at once instead of queueing.
		RateLimitWaitMax: 5 * time.Second,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) { v.opts.OnKeyError(fmt.Errorf("auth.jwt: key set %s: %w", u, err)) }
		},
	})
}

// limitedBody caps what is read of a key-set answer at 1 MiB.
type limitedBody struct{ rt http.RoundTripper }

func (l limitedBody) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := l.rt
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, 1<<20), resp.Body}
	}
	return resp, err
}

// Claims are a verified token's claims.
type Claims map[string]any

// Verify checks token for resource (the agent's canonical URL, the default
// audience). It returns the claims and the caller identity, or the reason
// it refuses the token (one of the Auth* constants) and the error behind
// it, which never contains the token.
func (v *JWTVerifier) Verify(ctx context.Context, token, resource string) (Claims, string, string, error) {
	if len(token) > maxTokenBytes {
		return nil, "", AuthOversized, errors.New("token larger than 8 KiB")
	}
	key := sha256.Sum256([]byte(resource + "\x00" + token))
	now := time.Now()
	v.vmu.Lock()
	if c, ok := v.verified[key]; ok && now.Before(c.until) {
		v.vmu.Unlock()
		return c.claims, c.id, AuthOK, nil
	}
	v.vmu.Unlock()
	select {
	case <-v.ready:
	default: // only until the first key set was looked for
		t := time.NewTimer(keyWait)
		select {
		case <-v.ready:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	v.mu.RLock()
	keys := v.keys
	v.mu.RUnlock()
	if keys == nil {
		return nil, "", AuthKeysUnavailable, errors.New("the issuer's keys are not known yet")
	}
	audiences := v.opts.Audiences
	if len(audiences) == 0 {
		audiences = []string{resource}
	}
	claims := jwt.MapClaims{}
	p := jwt.NewParser(jwt.WithValidMethods(v.opts.Algorithms), jwt.WithIssuer(v.opts.Issuer),
		jwt.WithAudience(audiences...), jwt.WithLeeway(v.opts.ClockSkew), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	tok, err := p.ParseWithClaims(token, claims, keys.KeyfuncCtx(ctx))
	if err != nil {
		return nil, "", jwtReason(tok, err, v.opts.Algorithms), err
	}
	id, ok := claims[v.opts.IdentityClaim].(string)
	if !ok || id == "" {
		return nil, "", AuthMissingClaim, fmt.Errorf("the token has no string claim %q", v.opts.IdentityClaim)
	}
	until := now.Add(verifiedTTL)
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil && exp.Before(until) {
		until = exp.Time
	}
	v.remember(key, verifiedToken{claims: Claims(claims), id: id, until: until})
	return Claims(claims), id, AuthOK, nil
}

// remember caches a verified token, making room by dropping expired
// entries, then arbitrary ones.
func (v *JWTVerifier) remember(key [sha256.Size]byte, t verifiedToken) {
	v.vmu.Lock()
	defer v.vmu.Unlock()
	now := time.Now()
	makeRoom(v.verified, maxVerified, func(c verifiedToken) bool { return !now.Before(c.until) })
	v.verified[key] = t
}

// jwtReason maps a parse error to its bounded reason.
func jwtReason(tok *jwt.Token, err error, algs []string) string {
	if tok != nil && tok.Method != nil && !slices.Contains(algs, tok.Method.Alg()) {
		return AuthDisallowedAlg
	}
	if tok != nil {
		if alg, _ := tok.Header["alg"].(string); alg != "" && !slices.Contains(algs, alg) {
			return AuthDisallowedAlg
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return AuthMalformed
	case errors.Is(err, jwt.ErrTokenExpired):
		return AuthExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return AuthNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return AuthWrongIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return AuthWrongAudience
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return AuthUnknownKey
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return AuthBadSignature
	}
	return AuthInvalidToken
}

// RequiredScopes are the scopes a token needs to call agent, sorted.
func (v *JWTVerifier) RequiredScopes(agent string) []string {
	var out []string
	for _, r := range v.scopes {
		if r.agents.Match(agent) {
			out = append(out, r.scopes...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AllScopes are every scope the configuration names, sorted.
func (v *JWTVerifier) AllScopes() []string {
	var out []string
	for _, r := range v.scopes {
		out = append(out, r.scopes...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MissingScopes are the scopes of need that claims do not grant: "scope"
// (space-separated, RFC 8693 / 9068) or "scp" (a list or a string).
func MissingScopes(claims Claims, need []string) []string {
	if len(need) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, key := range []string{"scope", "scp"} {
		switch v := claims[key].(type) {
		case string:
			for _, s := range strings.Fields(v) {
				have[s] = true
			}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					have[s] = true
				}
			}
		}
	}
	var missing []string
	for _, s := range need {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	return missing
}
