// Package idp holds the identity fixtures of the identity tests that do
// not need a program of their own: JWT signing and checking for test
// authorization servers, an RFC 8693 token-exchange server (ExchangeServer,
// also run as the program test/idp/tokenexchange) and the `whoami` MCP
// server that reports which credentials reached a downstream.
//
// Standard library only (plus the MCP SDK for whoami): the gateway's own
// JWT code is what is under test, so the fixtures do not share a JWT
// library with it. Only what the fixtures need is here: RS256 and ES256
// signatures, JWKS documents, the registered claims.
package idp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

var b64 = base64.RawURLEncoding

// Claims are a JWT's payload.
type Claims map[string]any

// String is a string claim ("" when absent or not a string).
func (c Claims) String(name string) string {
	s, _ := c[name].(string)
	return s
}

// Strings is a claim that is a string or a list of strings (aud, scp,
// groups), or a space-separated `scope` string, as a list.
func (c Claims) Strings(name string) []string {
	switch v := c[name].(type) {
	case string:
		if name == "scope" {
			return strings.Fields(v)
		}
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Time is a NumericDate claim (exp, iat, nbf); zero when absent.
func (c Claims) Time(name string) time.Time {
	if f, ok := c[name].(float64); ok {
		return time.Unix(int64(f), 0)
	}
	return time.Time{}
}

// Decode splits a compact JWS into its header and claims without checking
// the signature (for reports and assertions on tokens already checked).
func Decode(token string) (header map[string]any, claims Claims, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, fmt.Errorf("not a compact JWS: %d parts", len(parts))
	}
	if err := decodePart(parts[0], &header); err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	if err := decodePart(parts[1], &claims); err != nil {
		return nil, nil, fmt.Errorf("claims: %w", err)
	}
	return header, claims, nil
}

func decodePart(s string, v any) error {
	b, err := b64.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// JWK is one key of a JWKS document (RSA and EC public keys).
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// JWKS is a JSON Web Key Set document.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublicKey is the key's crypto form (*rsa.PublicKey or *ecdsa.PublicKey).
func (k JWK) PublicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err := b64.DecodeString(k.N)
		if err != nil {
			return nil, fmt.Errorf("n: %w", err)
		}
		e, err := b64.DecodeString(k.E)
		if err != nil {
			return nil, fmt.Errorf("e: %w", err)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		if k.Crv != "P-256" {
			return nil, fmt.Errorf("curve %q not supported", k.Crv)
		}
		x, err := b64.DecodeString(k.X)
		if err != nil {
			return nil, err
		}
		y, err := b64.DecodeString(k.Y)
		if err != nil {
			return nil, err
		}
		return &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}, nil
	}
	return nil, fmt.Errorf("key type %q not supported", k.Kty)
}

// Signer signs JWTs with one RSA key (RS256) and publishes it as a JWKS.
type Signer struct {
	key *rsa.PrivateKey
	kid string
}

// NewSigner makes a signer with a fresh 2048-bit RSA key.
func NewSigner() (*Signer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 8)
	rand.Read(id)
	return &Signer{key: key, kid: fmt.Sprintf("te-%x", id)}, nil
}

// Kid is the key id the signer puts in every header.
func (s *Signer) Kid() string { return s.kid }

// JWKS is the signer's public key set.
func (s *Signer) JWKS() JWKS {
	pub := s.key.PublicKey
	return JWKS{Keys: []JWK{{Kty: "RSA", Kid: s.kid, Use: "sig", Alg: "RS256",
		N: b64.EncodeToString(pub.N.Bytes()), E: b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}}}
}

// Sign returns claims as a compact RS256 JWS with header typ (e.g. "at+jwt",
// RFC 9068).
func (s *Signer) Sign(typ string, claims Claims) (string, error) {
	h, err := json.Marshal(map[string]string{"alg": "RS256", "kid": s.kid, "typ": typ})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// KeySet verifies tokens against a JWKS URL, fetched on first use and again
// (at most once a second) when a token names a kid it does not know.
type KeySet struct {
	URL    string
	Client *http.Client // default: 5 s timeout

	mu      sync.Mutex
	keys    map[string]crypto.PublicKey
	fetched time.Time
}

// Verify checks token's signature (RS256 or ES256 only: `none`, HS* and
// anything else are refused) and its exp/nbf with leeway, and returns its
// claims. Issuer and audience are the caller's to check.
func (ks *KeySet) Verify(ctx context.Context, token string, leeway time.Duration) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errors.New("malformed token")
	}
	header, claims, err := Decode(token)
	if err != nil {
		return nil, err
	}
	alg, _ := header["alg"].(string)
	kid, _ := header["kid"].(string)
	if alg != "RS256" && alg != "ES256" {
		return nil, fmt.Errorf("alg %q not accepted", alg)
	}
	key, err := ks.key(ctx, kid)
	if err != nil {
		return nil, err
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := key.(type) {
	case *rsa.PublicKey:
		if alg != "RS256" {
			return nil, fmt.Errorf("alg %s with an RSA key", alg)
		}
		if err := rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig); err != nil {
			return nil, errors.New("bad signature")
		}
	case *ecdsa.PublicKey:
		if alg != "ES256" || len(sig) != 64 {
			return nil, fmt.Errorf("alg %s with an EC key", alg)
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(k, sum[:], r, s) {
			return nil, errors.New("bad signature")
		}
	default:
		return nil, errors.New("unusable key")
	}
	now := time.Now()
	if exp := claims.Time("exp"); exp.IsZero() || now.After(exp.Add(leeway)) {
		return nil, errors.New("expired (or no exp)")
	}
	if nbf := claims.Time("nbf"); !nbf.IsZero() && now.Add(leeway).Before(nbf) {
		return nil, errors.New("not yet valid")
	}
	return claims, nil
}

func (ks *KeySet) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if k, ok := ks.keys[kid]; ok {
		return k, nil
	}
	if time.Since(ks.fetched) < time.Second {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	keys, err := FetchJWKS(ctx, ks.client(), ks.URL)
	ks.fetched = time.Now()
	if err != nil {
		return nil, err
	}
	ks.keys = keys
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown kid %q", kid)
}

func (ks *KeySet) client() *http.Client {
	if ks.Client != nil {
		return ks.Client
	}
	return &http.Client{Timeout: 5 * time.Second}
}

// FetchJWKS reads a JWKS document into its usable keys by kid.
func FetchJWKS(ctx context.Context, c *http.Client, url string) (map[string]crypto.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching JWKS: HTTP %d", resp.StatusCode)
	}
	var set JWKS
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if pk, err := k.PublicKey(); err == nil {
			keys[k.Kid] = pk
		}
	}
	return keys, nil
}
