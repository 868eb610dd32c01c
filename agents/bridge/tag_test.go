package bridge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"testing"
)

// A tag is HMAC-SHA256, under the derived key, of each part's 8-byte
// big-endian length and bytes, cut to 16 bytes: replicas of another build
// that share the state key compute the same (session ids and task ids
// stay valid across a rolling upgrade), and the pooled MACs do not carry
// one tag's input into the next.
func TestTagStable(t *testing.T) {
	s := newSealer(make([]byte, 32))
	want := func(parts ...string) string {
		mac := hmac.New(sha256.New, s.mac)
		for _, p := range parts {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(p)))
			mac.Write(n[:])
			mac.Write([]byte(p))
		}
		return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
	}
	for range 3 {
		for _, parts := range [][]string{nil, {""}, {"agent", "token:alice", "caps"}, {"a", "b"}, {"ab"}} {
			if got, w := s.tag(parts...), want(parts...); got != w {
				t.Errorf("tag(%q) = %s, want %s", parts, got, w)
			}
		}
	}
	if s.tag("a", "b") == s.tag("ab") {
		t.Error("the parts are not length-prefixed")
	}
}

func BenchmarkTag(b *testing.B) {
	s := newSealer(make([]byte, 32))
	b.ReportAllocs()
	for b.Loop() {
		s.tag("researcher", "token:alice", `{"elicitation":{}}`, "0123456789abcdef")
	}
}
