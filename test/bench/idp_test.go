package bench

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// idp is an identity provider in the benchmark process, for gateways in
// auth.mode jwt: OIDC discovery and a JWKS with one RS256 key. The gateway
// fetches the key set once and caches it; keyFetches shows it did.
type idp struct {
	*httptest.Server
	key        *rsa.PrivateKey
	keyFetches atomic.Int64
}

func newIDP(b *testing.B) *idp {
	b.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	p := &idp{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": p.URL, "jwks_uri": p.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.keyFetches.Add(1)
		enc := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": enc(key.N.Bytes()), "e": enc(big.NewInt(int64(key.E)).Bytes())}}})
	})
	p.Server = httptest.NewServer(mux)
	b.Cleanup(p.Close)
	return p
}

// token is an RS256 access token for audience aud, valid for a day.
func (p *idp) token(b *testing.B, aud string) string {
	b.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": p.URL, "sub": "bench", "aud": aud,
		"iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(p.key)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
