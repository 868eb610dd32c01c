package sessions

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

func tagger(key string) Tagger {
	return func(parts ...string) string {
		m := hmac.New(sha256.New, []byte(key))
		for _, p := range parts {
			m.Write([]byte(p))
			m.Write([]byte{0})
		}
		return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
	}
}

func TestSessionIDBelongsToItsPrincipal(t *testing.T) {
	k := tagger("k1")
	alice := NewID(k, "a", "token:alice", "es")
	anon := NewID(k, "a", "", "")
	cases := []struct {
		name, agent, principal, id string
		key                        Tagger
		want                       int
	}{
		{"its creator", "a", "token:alice", alice, k, Owned},
		{"another token", "a", "token:bob", alice, k, Foreign},
		{"a JWT user of the same name", "a", "jwt:alice", alice, k, Foreign},
		{"another agent", "b", "token:alice", alice, k, Foreign},
		{"another state key", "a", "token:alice", alice, tagger("k2"), Foreign},
		{"altered capabilities", "a", "token:alice", strings.Replace(alice, "pgw-es-", "pgw-esr-", 1), k, Foreign},
		{"anonymous: whoever holds it", "a", "", anon, k, Owned},
		{"an anonymous session is not a token caller's", "a", "token:bob", anon, k, Foreign},
		{"an id the caller chose", "a", "token:bob", "my-session", k, Unsealed},
		{"an unsealed pgw id", "a", "token:bob", "pgw-es-0123", k, Unsealed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Check(c.key, c.agent, c.principal, c.id); got != c.want {
				t.Errorf("Check(%q) = %d, want %d", c.id, got, c.want)
			}
		})
	}
	if NewID(k, "a", "token:alice", "es") == alice {
		t.Error("two sessions got one id")
	}
}

func TestDeclaredCapabilities(t *testing.T) {
	k := tagger("k1")
	for _, c := range []struct {
		name, id string
		want     map[byte]bool
	}{
		{"URL mode", NewID(k, "a", "token:alice", "eus"), map[byte]bool{CapElicitation: true, CapElicitationURL: true, CapSampling: true}},
		{"minted before URL mode was recorded: form only", NewID(k, "a", "token:alice", "es"), map[byte]bool{CapElicitation: true, CapSampling: true}},
		{"a letter of a later version is ignored", NewID(k, "a", "token:alice", "ezr"), map[byte]bool{CapElicitation: true, CapRoots: true}},
		{"none", NewID(k, "a", "token:alice", ""), nil},
		{"not the gateway's", "my-eu-session", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, letter := range []byte{CapElicitation, CapElicitationURL, CapSampling, CapRoots} {
				if got := Declared(c.id, letter); got != c.want[letter] {
					t.Errorf("Declared(%q, %c) = %v", c.id, letter, got)
				}
			}
		})
	}
}
