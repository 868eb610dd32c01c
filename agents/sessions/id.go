// Package sessions owns who a caller's MCP session belongs to and what of
// it any replica can read: the session ids the gateway mints at initialize,
// which seal the principal that created them (so a replica that shares the
// state key checks a request's session without shared state), and the
// caller key a downstream session is scoped to (session_scope). It does not
// serve requests, hold sessions or decide policy: agents/endpoint asks it
// whether a session id is the caller's, agents/mcpclient keys its pools
// with it.
package sessions

// Session ids. The id a session-based caller gets from initialize is
//
//	"pgw-" [caps "-"] <32 hex digits: 128 random bits> "." <32 hex digits: tag>
//
// caps are the letters of the client capabilities it declared
// (elicitation, its URL mode, sampling, roots: e, u, s, r; Declared), which
// the endpoint reads later;
// tag is a MAC, under a key derived from the gateway's state_key, of the
// agent, the caps, the random part and the principal of the caller that
// initialized (policy.Identity.Principal: a token's name, a JWT subject; ""
// for an anonymous caller, whose session belongs to whoever holds it). A
// request that carries such an id is the session's only when the tag
// computed for its own principal matches: another principal's request,
// one minted under another state key, or an altered id, is a session this
// gateway does not know. Both halves are hex so that the endpoint's
// capability letters (before the first "-") can never be read from them.

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Prefix starts every session id the gateway mints.
const Prefix = "pgw-"

// The client capabilities an id records, one letter each. A reader takes
// the letters it knows and ignores others, so ids stay readable across
// versions: one minted before u existed reads as form-mode elicitation
// only, and an older gateway reads a newer id's e, s and r.
const (
	CapElicitation    = 'e'
	CapElicitationURL = 'u' // elicitation's URL mode (MCP 2025-11-25), declared with e
	CapSampling       = 's'
	CapRoots          = 'r'
)

// Declared reports whether id was minted for a caller that declared
// capability c (one of the Cap letters); false for an id without letters
// or not minted by the gateway.
func Declared(id string, c byte) bool {
	rest, ok := strings.CutPrefix(id, Prefix)
	if !ok {
		return false
	}
	caps, _, ok := strings.Cut(rest, "-")
	return ok && strings.IndexByte(caps, c) >= 0
}

// Tagger computes a MAC of parts under the state key
// (endpoint.CallerRequests.Tag): replicas that share the key agree.
type Tagger func(parts ...string) string

// NewID mints the session id of a caller (principal) that declared caps
// at agent's initialize.
func NewID(tag Tagger, agent, principal, caps string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	body := Prefix + hex.EncodeToString(b)
	if caps != "" {
		body = Prefix + caps + "-" + hex.EncodeToString(b)
	}
	return body + "." + idTag(tag, agent, principal, body)
}

// Ownership of a session id a request carries.
const (
	// Unsealed: not an id this gateway minted with a seal (no tag): a
	// correlation key only, which the caller chose and nobody else shares.
	Unsealed = iota
	// Owned: minted for this principal at this agent, under this key.
	Owned
	// Foreign: sealed, and not for this principal, agent or key; served
	// as an unknown session.
	Foreign
)

// Check tells whether id, carried by a request of principal at agent, is
// that caller's session.
func Check(tag Tagger, agent, principal, id string) int {
	body, mac, ok := strings.Cut(id, ".")
	if !ok || !strings.HasPrefix(id, Prefix) {
		return Unsealed
	}
	if !hmac.Equal([]byte(mac), []byte(idTag(tag, agent, principal, body))) {
		return Foreign
	}
	return Owned
}

// idTag is the hex seal of an id's body for principal at agent.
func idTag(tag Tagger, agent, principal, body string) string {
	t := tag("session", agent, principal, body)
	var raw [64]byte // a tag is 16 bytes: decoded on the stack
	if base64.RawURLEncoding.DecodedLen(len(t)) > len(raw) {
		return hex.EncodeToString([]byte(t)) // a tagger of another form: still one value per input
	}
	n, err := base64.RawURLEncoding.Decode(raw[:], []byte(t))
	if err != nil {
		return hex.EncodeToString([]byte(t))
	}
	return hex.EncodeToString(raw[:n])
}
