package policy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// idp is a test identity provider: discovery, a JWKS that can change or
// break, and keys to sign with.
type idp struct {
	srv     *httptest.Server
	rsa     *rsa.PrivateKey
	ec      *ecdsa.PrivateKey
	mu      sync.Mutex
	jwks    string // the key set served; "" = the real one
	fetches atomic.Int64
}

func newIDP(t testing.TB) *idp {
	t.Helper()
	p := &idp{}
	var err error
	if p.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if p.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		body := p.jwks
		p.mu.Unlock()
		if body == "" {
			body = p.keySet(t, "rsa-1", "ec-1")
		}
		w.Write([]byte(body))
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// keySet is the JWKS with the RSA key under rsaKid and the EC key under ecKid.
func (p *idp) keySet(t testing.TB, rsaKid, ecKid string) string {
	pad := func(b *big.Int) []byte { out := make([]byte, 32); return b.FillBytes(out) }
	set := map[string]any{"keys": []map[string]any{
		{"kty": "RSA", "kid": rsaKid, "alg": "RS256", "use": "sig", "n": b64(p.rsa.N.Bytes()), "e": b64(big.NewInt(int64(p.rsa.E)).Bytes())},
		{"kty": "EC", "kid": ecKid, "alg": "ES256", "use": "sig", "crv": "P-256", "x": b64(pad(p.ec.X)), "y": b64(pad(p.ec.Y))},
	}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (p *idp) serve(jwks string) {
	p.mu.Lock()
	p.jwks = jwks
	p.mu.Unlock()
}

const resource = "https://gw.example.com/agents/research/mcp"

func (p *idp) claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"iss": p.srv.URL, "sub": "alice", "aud": resource, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"scope": "agents.read agents.admin", "groups": []any{"ops", "dev"}}
	if mod != nil {
		mod(c)
	}
	return c
}

func (p *idp) sign(t testing.TB, method jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t testing.TB, p *idp, mod func(*JWTOptions)) *JWTVerifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o := JWTOptions{Issuer: p.srv.URL, Algorithms: []string{"RS256", "ES256", "EdDSA"}, ClockSkew: time.Minute,
		IdentityClaim: "sub", Scopes: map[string][]string{"research": {"agents.read"}, "admin_*": {"agents.admin", "agents.root"}}}
	if mod != nil {
		mod(&o)
	}
	v, err := NewJWTVerifier(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJWTVerify(t *testing.T) {
	p := newIDP(t)
	v := newVerifier(t, p, nil)
	rsaTok := func(mod func(jwt.MapClaims)) string {
		return p.sign(t, jwt.SigningMethodRS256, "rsa-1", p.rsa, p.claims(mod))
	}
	pubPEM, err := x509.MarshalPKIXPublicKey(&p.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	hmacWithPublicKey := p.sign(t, jwt.SigningMethodHS256, "rsa-1", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubPEM}), p.claims(nil))
	unsigned := p.sign(t, jwt.SigningMethodNone, "", jwt.UnsafeAllowNoneSignatureType, p.claims(nil))
	otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, c := range []struct {
		name, token, reason string
	}{
		{"RS256", rsaTok(nil), AuthOK},
		{"ES256", p.sign(t, jwt.SigningMethodES256, "ec-1", p.ec, p.claims(nil)), AuthOK},
		{"audience in a list", rsaTok(func(c jwt.MapClaims) { c["aud"] = []any{"other", resource} }), AuthOK},
		{"within the clock skew", rsaTok(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-30 * time.Second).Unix() }), AuthOK},
		{"expired", rsaTok(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-2 * time.Minute).Unix() }), AuthExpired},
		{"no exp", rsaTok(func(c jwt.MapClaims) { delete(c, "exp") }), AuthInvalidToken},
		{"not yet valid", rsaTok(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() }), AuthNotYetValid},
		{"wrong issuer", rsaTok(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }), AuthWrongIssuer},
		{"wrong audience", rsaTok(func(c jwt.MapClaims) { c["aud"] = "https://gw.example.com/agents/other/mcp" }), AuthWrongAudience},
		{"alg none", unsigned, AuthDisallowedAlg},
		{"HS256 with the public key", hmacWithPublicKey, AuthDisallowedAlg},
		{"signed by another key", p.sign(t, jwt.SigningMethodRS256, "rsa-1", otherKey, p.claims(nil)), AuthBadSignature},
		{"unknown kid", p.sign(t, jwt.SigningMethodRS256, "rsa-9", p.rsa, p.claims(nil)), AuthUnknownKey},
		{"malformed", "not.a.jwt", AuthMalformed},
		{"oversized", strings.Repeat("a", maxTokenBytes+1), AuthOversized},
		{"no identity claim", rsaTok(func(c jwt.MapClaims) { delete(c, "sub") }), AuthMissingClaim},
	} {
		t.Run(c.name, func(t *testing.T) {
			claims, id, reason, err := v.Verify(context.Background(), c.token, resource)
			if reason != c.reason {
				t.Fatalf("reason %q (%v), want %q", reason, err, c.reason)
			}
			if c.reason == AuthOK && (id != "alice" || claims["sub"] != "alice") {
				t.Errorf("identity %q, claims %v", id, claims)
			}
			if err != nil && strings.Contains(err.Error(), c.token) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
}

// An unknown kid refetches the key set once, and again only after the rate
// limit: a rotation is picked up, a flood of made-up kids costs one fetch.
func TestJWTKeyRotationAndRefetchLimit(t *testing.T) {
	p := newIDP(t)
	v := newVerifier(t, p, nil)
	if _, _, reason, err := v.Verify(context.Background(), p.sign(t, jwt.SigningMethodRS256, "rsa-1", p.rsa, p.claims(nil)), resource); reason != AuthOK {
		t.Fatal(reason, err)
	}
	p.serve(p.keySet(t, "rsa-2", "ec-1")) // the issuer rotates its RSA key id
	before := p.fetches.Load()
	if _, _, reason, err := v.Verify(context.Background(), p.sign(t, jwt.SigningMethodRS256, "rsa-2", p.rsa, p.claims(nil)), resource); reason != AuthOK {
		t.Fatalf("rotated key: %s %v", reason, err)
	}
	for i := range 50 {
		tok := p.sign(t, jwt.SigningMethodRS256, "made-up-"+string(rune('a'+i%26)), p.rsa, p.claims(nil))
		if _, _, reason, _ := v.Verify(context.Background(), tok, resource); reason != AuthUnknownKey {
			t.Fatalf("made-up kid: %s", reason)
		}
	}
	if n := p.fetches.Load() - before; n != 1 {
		t.Errorf("%d key set fetches for a rotation and 50 unknown kids, want 1", n)
	}
}

// A key set that turns to garbage keeps the last good keys in use; an
// unsigned token never gets in.
func TestJWTKeySetGarbageKeepsLastGood(t *testing.T) {
	p := newIDP(t)
	var keyErrors atomic.Int64
	v := newVerifier(t, p, func(o *JWTOptions) { o.OnKeyError = func(error) { keyErrors.Add(1) } })
	good := p.sign(t, jwt.SigningMethodRS256, "rsa-1", p.rsa, p.claims(nil))
	if _, _, reason, _ := v.Verify(context.Background(), good, resource); reason != AuthOK {
		t.Fatal(reason)
	}
	p.serve("<html>garbage</html>")
	// An unknown kid forces a refresh, which fails.
	if _, _, reason, _ := v.Verify(context.Background(), p.sign(t, jwt.SigningMethodRS256, "rsa-7", p.rsa, p.claims(nil)), resource); reason != AuthUnknownKey {
		t.Fatal(reason)
	}
	if _, _, reason, _ := v.Verify(context.Background(), good, resource); reason != AuthOK {
		t.Errorf("after a garbage key set: %s, want the last good keys in use", reason)
	}
	if _, _, reason, _ := v.Verify(context.Background(), p.sign(t, jwt.SigningMethodNone, "", jwt.UnsafeAllowNoneSignatureType, p.claims(nil)), resource); reason == AuthOK {
		t.Error("an unsigned token got in")
	}
}

// An identity provider that cannot be reached: requests are refused as
// jwks_unavailable (after a bounded wait), never let in.
func TestJWTIssuerDown(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	var keyErrors atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := NewJWTVerifier(ctx, JWTOptions{Issuer: dead.URL, Algorithms: []string{"RS256"}, IdentityClaim: "sub",
		OnKeyError: func(err error) {
			if errors.Is(err, ErrNoKeys) {
				keyErrors.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, reason, err := v.Verify(context.Background(), "a.b.c", resource)
	if reason != AuthKeysUnavailable {
		t.Errorf("reason %q (%v), want %q", reason, err, AuthKeysUnavailable)
	}
	if keyErrors.Load() == 0 {
		t.Error("the failed discovery was not reported as ErrNoKeys")
	}
}

func TestScopes(t *testing.T) {
	p := newIDP(t)
	v := newVerifier(t, p, nil)
	if got := v.RequiredScopes("admin_tools"); strings.Join(got, " ") != "agents.admin agents.root" {
		t.Errorf("admin_tools needs %v", got)
	}
	if got := v.AllScopes(); strings.Join(got, " ") != "agents.admin agents.read agents.root" {
		t.Errorf("all scopes %v", got)
	}
	claims := Claims{"scope": "agents.read agents.admin"}
	if m := MissingScopes(claims, v.RequiredScopes("admin_tools")); strings.Join(m, " ") != "agents.root" {
		t.Errorf("missing %v", m)
	}
	if m := MissingScopes(Claims{"scp": []any{"agents.read"}}, v.RequiredScopes("research")); m != nil {
		t.Errorf("scp list: missing %v", m)
	}
}

func TestMatchRule(t *testing.T) {
	p, err := NewCallerPolicy(map[string]Rule{
		"late-ops": {Match: map[string]any{"groups": "ops"}, Order: 20},
		"ops":      {Match: map[string]any{"groups": []any{"ops", "sre"}}, Order: 10},
		"svc":      {Match: map[string]any{"client_id": "billing", "tier": 2}, Order: 30},
		"web-ui":   {},
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		claims Claims
		want   string
	}{
		{Claims{"groups": []any{"dev", "ops"}}, "ops"}, // the first in file order of the two that match
		{Claims{"groups": "sre"}, "ops"},
		{Claims{"client_id": "billing", "tier": float64(2)}, "svc"},
		{Claims{"client_id": "billing"}, ""}, // every claim of a match must be met
		{Claims{"sub": "web-ui"}, ""},        // never by name alone
	} {
		if got := p.MatchRule(c.claims); got != c.want {
			t.Errorf("%v: rule %q, want %q", c.claims, got, c.want)
		}
	}
	if k := (Identity{Caller: "web-ui", Claims: Claims{}}).PolicyKey(); k == "web-ui" {
		t.Error("a JWT caller got a static caller's rule by its identity claim")
	}
}

// A verified token is trusted again without a new signature check, but
// only for the same resource and never past its exp.
func TestJWTVerifiedCache(t *testing.T) {
	p := newIDP(t)
	v := newVerifier(t, p, func(o *JWTOptions) { o.ClockSkew = 0 })
	tok := p.sign(t, jwt.SigningMethodRS256, "rsa-1", p.rsa, p.claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(1500 * time.Millisecond).Unix() }))
	for range 2 {
		if _, _, reason, err := v.Verify(context.Background(), tok, resource); reason != AuthOK {
			t.Fatal(reason, err)
		}
	}
	if _, _, reason, _ := v.Verify(context.Background(), tok, "https://gw.example.com/agents/other/mcp"); reason != AuthWrongAudience {
		t.Errorf("another resource: %s, want the audience checked again", reason)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, reason, _ := v.Verify(context.Background(), tok, resource)
		if reason == AuthExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an expired token is still served from the cache: %s", reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
