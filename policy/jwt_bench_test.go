package policy

import (
	"context"
	"crypto"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// targetVerifyMicros is what validating a JWT with a cached key is to cost
// per call (printed against, never asserted).
const targetVerifyMicros = 20.0

// BenchmarkJWTVerify is one Verify call as the gateway makes it per request,
// for a token the verifier has seen (the common case: a client repeats its
// token), and uncached: the first time a token is seen
// (auth.mode jwt): parsing, the signature against the issuer's cached key,
// issuer, audience (the agent's canonical URL), expiry and the identity
// claim. The key set is fetched before the timer starts, so no call here
// reaches the identity provider (checked). The signature-only variants
// are the floor under it: jwt's check of the same signature with the same
// public key, nothing else.
//
//	go test -run '^$' -bench JWTVerify -benchtime 2s ./policy/
func BenchmarkJWTVerify(b *testing.B) {
	p := newIDP(b)
	v := newVerifier(b, p, nil)
	for _, c := range []struct {
		name   string
		method jwt.SigningMethod
		kid    string
		key    any
	}{
		{"RS256", jwt.SigningMethodRS256, "rsa-1", p.rsa},
		{"ES256", jwt.SigningMethodES256, "ec-1", p.ec},
	} {
		token := p.sign(b, c.method, c.kid, c.key, p.claims(nil))
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			if _, _, reason, err := v.Verify(ctx, token, resource); reason != AuthOK {
				b.Fatalf("%s: %v", reason, err) // also fetches and caches the key set
			}
			fetches := p.fetches.Load()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, reason, err := v.Verify(ctx, token, resource); reason != AuthOK {
					b.Fatalf("%s: %v", reason, err)
				}
			}
			if n := p.fetches.Load() - fetches; n != 0 {
				b.Fatalf("%d key set fetches while measuring: the key was not cached", n)
			}
			perOp := float64(b.Elapsed()) / float64(b.N) / float64(time.Microsecond)
			b.ReportMetric(perOp, "µs/op")
			b.Logf("%s: %.1f µs per Verify with the key cached (target < %.0f µs: %s)", c.name, perOp, targetVerifyMicros, verdict(perOp < targetVerifyMicros))
		})
		b.Run(c.name+"-uncached", func(b *testing.B) {
			// A token seen for the first time (or after verifiedTTL): the
			// whole check, signature included.
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				v.vmu.Lock()
				clear(v.verified)
				v.vmu.Unlock()
				if _, _, reason, err := v.Verify(ctx, token, resource); reason != AuthOK {
					b.Fatalf("%s: %v", reason, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Microsecond), "µs/op")
		})
		b.Run(c.name+"-signature-only", func(b *testing.B) {
			i := strings.LastIndexByte(token, '.')
			sig, err := base64.RawURLEncoding.DecodeString(token[i+1:])
			if err != nil {
				b.Fatal(err)
			}
			pub := c.key.(crypto.Signer).Public()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.method.Verify(token[:i], sig, pub); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Microsecond), "µs/op")
		})
	}
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
