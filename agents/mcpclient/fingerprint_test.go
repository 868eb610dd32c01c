package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fingerprintStreamed is fingerprint as it was written first (a streamed
// digest), kept to hold the key the same across versions: replicas of two
// versions share a caller's downstream session through the key's digest.
func fingerprintStreamed(h http.Header) string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	sum := sha256.New()
	for _, name := range names {
		sum.Write([]byte(name))
		sum.Write([]byte{0})
		for _, v := range h[name] {
			sum.Write([]byte(v))
			sum.Write([]byte{0})
		}
		sum.Write([]byte{1})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

func TestFingerprintStable(t *testing.T) {
	for _, h := range []http.Header{
		nil, {},
		{"X-Api-Key": {"k"}},
		{"X-A": {"1", "2"}, "X-B": {""}, "Authorization": {"Bearer t"}},
		{"X-Long": {strings.Repeat("v", 2000)}},
	} {
		if got, want := fingerprint(h), fingerprintStreamed(h); got != want {
			t.Errorf("fingerprint(%v) = %s, want %s", h, got, want)
		}
	}
	many := http.Header{}
	for i := range 40 {
		many.Set("X-H"+strings.Repeat("a", i), "v")
	}
	if got, want := fingerprint(many), fingerprintStreamed(many); got != want {
		t.Errorf("40 headers: %s, want %s", got, want)
	}
}
