package idp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// RFC 8693 names.
const (
	GrantTokenExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// ExchangeConfig configures an ExchangeServer.
type ExchangeConfig struct {
	// Issuer is the `iss` of the tokens it issues (its base URL).
	Issuer string
	// Clients are the clients allowed to exchange, id -> secret. They
	// authenticate with client_secret_basic or client_secret_post.
	Clients map[string]string
	// SubjectJWKS is the JWKS URL subject tokens are verified against (the
	// inbound IdP's, e.g. Hydra's /.well-known/jwks.json). Empty: the subject
	// token is only parsed (a JWT with a `sub` is required).
	SubjectJWKS string
	// SubjectIssuer, when set, is the `iss` a subject token must carry.
	SubjectIssuer string
	// TTL is the lifetime of issued tokens; default 5 minutes.
	TTL time.Duration
	// Log, when set, gets one line per request (never a token).
	Log *log.Logger
}

// Exchange is one token exchange the server answered, as /stats reports it.
type Exchange struct {
	Client    string    `json:"client"`
	Subject   string    `json:"subject"`
	Audience  []string  `json:"audience"`
	Resource  []string  `json:"resource"`
	Scope     string    `json:"scope"`
	ExpiresIn int       `json:"expires_in"`
	At        time.Time `json:"at"`
}

// Stats is what GET /stats answers.
type Stats struct {
	Exchanges int        `json:"exchanges"` // successful exchanges
	Refused   int        `json:"refused"`   // token requests answered with an error
	Recent    []Exchange `json:"recent"`    // the last 100 exchanges, oldest first
	Errors    []string   `json:"errors"`    // the last 100 refusals' error codes and reasons
}

// ExchangeServer is a minimal OAuth 2.0 authorization server that does only
// RFC 8693 token exchange, for tests of a gateway acting for its callers
// toward downstreams (Hydra v2.3.0 has no token exchange grant).
//
//	POST /token                                   the token endpoint (RFC 8693 §2)
//	GET  /jwks.json                               its signing key
//	GET  /.well-known/oauth-authorization-server  RFC 8414 metadata
//	GET  /stats                                   Stats as JSON (tests count exchanges)
//
// The issued token is an RS256 JWT access token (RFC 9068 shape, header typ
// at+jwt): iss = Issuer, sub = the subject token's sub, aud = the requested
// audience and resource values, client_id = the exchanging client, act =
// {sub: client} (the RFC 8693 §4.1 actor: the gateway acts for the
// subject), scope = the requested scope, exp = now + TTL, jti, iat, nbf.
type ExchangeServer struct {
	cfg    ExchangeConfig
	signer *Signer
	keys   *KeySet

	mu    sync.Mutex
	stats Stats
}

// NewExchangeServer makes a server with a fresh signing key.
func NewExchangeServer(cfg ExchangeConfig) (*ExchangeServer, error) {
	if cfg.TTL == 0 {
		cfg.TTL = 5 * time.Minute
	}
	s, err := NewSigner()
	if err != nil {
		return nil, err
	}
	x := &ExchangeServer{cfg: cfg, signer: s}
	if cfg.SubjectJWKS != "" {
		x.keys = &KeySet{URL: cfg.SubjectJWKS}
	}
	return x, nil
}

// JWKS is the public key set its tokens are signed with.
func (x *ExchangeServer) JWKS() JWKS { return x.signer.JWKS() }

// Stats is a copy of the counters.
func (x *ExchangeServer) Stats() Stats {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.stats
	s.Recent = slices.Clone(s.Recent)
	s.Errors = slices.Clone(s.Errors)
	return s
}

func (x *ExchangeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/token":
		x.token(w, r)
	case r.URL.Path == "/jwks.json" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, x.signer.JWKS())
	case r.URL.Path == "/.well-known/oauth-authorization-server" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                x.cfg.Issuer,
			"token_endpoint":                        x.cfg.Issuer + "/token",
			"jwks_uri":                              x.cfg.Issuer + "/jwks.json",
			"grant_types_supported":                 []string{GrantTokenExchange},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		})
	case r.URL.Path == "/stats" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, x.Stats())
	default:
		http.NotFound(w, r)
	}
}

// oauthError is an RFC 6749 §5.2 error answer.
type oauthError struct {
	status int
	code   string
	desc   string
}

func (x *ExchangeServer) token(w http.ResponseWriter, r *http.Request) {
	ex, oerr := x.exchange(r)
	if oerr != nil {
		x.mu.Lock()
		x.stats.Refused++
		x.stats.Errors = lastN(append(x.stats.Errors, oerr.code+": "+oerr.desc), 100)
		x.mu.Unlock()
		x.logf("refused: %s: %s", oerr.code, oerr.desc)
		if oerr.code == "invalid_client" {
			w.Header().Set("WWW-Authenticate", `Basic realm="token-exchange"`)
		}
		writeJSON(w, oerr.status, map[string]string{"error": oerr.code, "error_description": oerr.desc})
		return
	}
	x.logf("exchanged: client=%s sub=%s aud=%v resource=%v scope=%q", ex.client.Client, ex.client.Subject, ex.client.Audience, ex.client.Resource, ex.client.Scope)
	x.mu.Lock()
	x.stats.Exchanges++
	x.stats.Recent = lastN(append(x.stats.Recent, ex.client), 100)
	x.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	resp := map[string]any{
		"access_token":      ex.token,
		"issued_token_type": TokenTypeAccessToken,
		"token_type":        "Bearer",
		"expires_in":        ex.client.ExpiresIn,
	}
	if ex.client.Scope != "" {
		resp["scope"] = ex.client.Scope
	}
	writeJSON(w, http.StatusOK, resp)
}

type issued struct {
	client Exchange
	token  string
}

func (x *ExchangeServer) exchange(r *http.Request) (*issued, *oauthError) {
	bad := func(code, format string, args ...any) *oauthError {
		return &oauthError{status: http.StatusBadRequest, code: code, desc: fmt.Sprintf(format, args...)}
	}
	if r.Method != http.MethodPost {
		return nil, &oauthError{status: http.StatusMethodNotAllowed, code: "invalid_request", desc: "POST only"}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return nil, bad("invalid_request", "Content-Type %q, want application/x-www-form-urlencoded", ct)
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return nil, bad("invalid_request", "form: %v", err)
	}
	form := r.PostForm
	for _, single := range []string{"grant_type", "subject_token", "subject_token_type", "scope", "client_id", "client_secret", "requested_token_type", "actor_token"} {
		if len(form[single]) > 1 {
			return nil, bad("invalid_request", "%s given more than once", single)
		}
	}

	// Client authentication (RFC 6749 §2.3.1): one method only.
	client, secret, basic := r.BasicAuth()
	if basic {
		if form.Get("client_secret") != "" {
			return nil, bad("invalid_request", "two client authentication methods")
		}
		// The Basic credentials are form-urlencoded first (§2.3.1).
		var err1, err2 error
		client, err1 = url.QueryUnescape(client)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", desc: "malformed Basic credentials"}
		}
	} else {
		client, secret = form.Get("client_id"), form.Get("client_secret")
	}
	want, known := x.cfg.Clients[client]
	if client == "" || !known || subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		return nil, &oauthError{status: http.StatusUnauthorized, code: "invalid_client", desc: fmt.Sprintf("client %q: authentication failed", client)}
	}

	if gt := form.Get("grant_type"); gt != GrantTokenExchange {
		return nil, bad("unsupported_grant_type", "grant_type %q", gt)
	}
	if form.Get("actor_token") != "" {
		return nil, bad("invalid_request", "actor_token is not supported")
	}
	subjectToken := form.Get("subject_token")
	if subjectToken == "" {
		return nil, bad("invalid_request", "subject_token missing")
	}
	switch stt := form.Get("subject_token_type"); stt {
	case TokenTypeAccessToken, TokenTypeJWT:
	case "":
		return nil, bad("invalid_request", "subject_token_type missing")
	default:
		return nil, bad("invalid_request", "subject_token_type %q not supported", stt)
	}
	switch rtt := form.Get("requested_token_type"); rtt {
	case "", TokenTypeAccessToken, TokenTypeJWT:
	default:
		return nil, bad("invalid_request", "requested_token_type %q not supported", rtt)
	}

	var subject Claims
	if x.keys != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		c, err := x.keys.Verify(ctx, subjectToken, 5*time.Second)
		cancel()
		if err != nil {
			return nil, bad("invalid_request", "subject_token: %v", err)
		}
		subject = c
	} else {
		_, c, err := Decode(subjectToken)
		if err != nil {
			return nil, bad("invalid_request", "subject_token: %v", err)
		}
		subject = c
	}
	if x.cfg.SubjectIssuer != "" && subject.String("iss") != x.cfg.SubjectIssuer {
		return nil, bad("invalid_request", "subject_token: issuer %q", subject.String("iss"))
	}
	sub := subject.String("sub")
	if sub == "" {
		return nil, bad("invalid_request", "subject_token has no sub")
	}

	audience, resource := form["audience"], form["resource"]
	for _, res := range resource {
		if u, err := url.Parse(res); err != nil || !u.IsAbs() || u.Fragment != "" {
			return nil, bad("invalid_target", "resource %q is not an absolute URI without fragment", res)
		}
	}
	aud := append(slices.Clone(audience), resource...)
	if len(aud) == 0 {
		return nil, bad("invalid_target", "neither audience nor resource given")
	}

	now := time.Now()
	ttl := int(x.cfg.TTL / time.Second)
	jti := make([]byte, 12)
	rand.Read(jti)
	claims := Claims{
		"iss":       x.cfg.Issuer,
		"sub":       sub,
		"client_id": client,
		"act":       map[string]string{"sub": client},
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"exp":       now.Unix() + int64(ttl),
		"jti":       fmt.Sprintf("%x", jti),
	}
	if len(aud) == 1 {
		claims["aud"] = aud[0]
	} else {
		claims["aud"] = aud
	}
	scope := form.Get("scope")
	if scope != "" {
		claims["scope"] = scope
	}
	tok, err := x.signer.Sign("at+jwt", claims)
	if err != nil {
		return nil, &oauthError{status: http.StatusInternalServerError, code: "server_error", desc: err.Error()}
	}
	return &issued{token: tok, client: Exchange{Client: client, Subject: sub, Audience: audience, Resource: resource,
		Scope: scope, ExpiresIn: ttl, At: now}}, nil
}

func (x *ExchangeServer) logf(format string, args ...any) {
	if x.cfg.Log != nil {
		x.cfg.Log.Printf(format, args...)
	}
}

func lastN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// ExchangeRequest is the client side, for tests of the fixture itself: one
// token exchange with client_secret_basic (post = false) or
// client_secret_post.
func ExchangeRequest(ctx context.Context, tokenURL, clientID, secret string, post bool, form url.Values) (int, map[string]any, error) {
	form = maps(form)
	if post {
		form.Set("client_id", clientID)
		form.Set("client_secret", secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if !post {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, out, nil
}

func maps(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
