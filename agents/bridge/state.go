package bridge

// The requestState of the input-required bridge (bridge.go): what a
// replica needs to finish a call that asked its 2026-07-28 caller for input,
// sealed with AES-256-GCM under the gateway's state_key, so that
// the caller can neither read nor change it and replicas that share the key
// can open each other's.
//
// Wire form: base64url (no padding) of version byte 1 | 12-byte nonce |
// ciphertext+tag. The additional data binds it to the agent; the payload
// (roundState, JSON) names the caller, the tool, the digest of the arguments, the
// waiting call's id on the replica that asked, the expiry, the requests of
// this round (key → method and params digest) and the answers of earlier
// rounds, so that a replica without the waiting call can replay it, and,
// for a target that continues from a checkpoint (an llm agent's tool
// loop), that checkpoint.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const stateVersion = 1

// roundState is the sealed payload of one input-required answer.
type roundState struct {
	ID     string                `json:"id,omitempty"` // the waiting call on the replica that asked
	Agent  string                `json:"agent"`
	Caller string                `json:"caller,omitempty"` // the caller's principal (policy.Identity.Principal)
	Tool   string                `json:"tool"`
	Args   string                `json:"args"` // argsDigest of the call's arguments
	Exp    int64                 `json:"exp"`  // unix seconds
	Asked  map[string]askedInput `json:"asked,omitempty"`
	Prior  map[string]askedInput `json:"prior,omitempty"`  // answered in earlier rounds, with the answers
	IsNat  bool                  `json:"nat,omitempty"`    // the downstream answered input_required itself
	Native string                `json:"native,omitempty"` // and this was its requestState
	Resume json.RawMessage       `json:"resume,omitempty"` // the target's checkpoint (SetCheckpoint)
	Lost   bool                  `json:"lost,omitempty"`   // it had one, too large to carry
}

// askedInput is one request of a round: its method, the digest of its
// params, and (in Prior) the caller's answer.
type askedInput struct {
	M string          `json:"m"`
	D string          `json:"d"`
	R json.RawMessage `json:"r,omitempty"`
}

// Reasons a requestState is refused (the metric's label).
const (
	stateInvalid  = "invalid"  // not ours: malformed, tampered, sealed under another key
	stateExpired  = "expired"  // past its expiry
	stateMismatch = "mismatch" // for another agent, caller, tool or arguments
	stateLost     = "lost"     // its call ended, and it could not carry the checkpoint to continue it
)

// stateError is a refused requestState.
type stateError struct {
	reason string
	msg    string
}

func (e *stateError) Error() string { return e.msg }

// Sealer seals and opens states under the gateway's state key, and makes
// tags (Tag) under a key derived from it: the state codec, shared by the
// bridge, session ids and task ids. A reload with a new state_key
// replaces the key (SetKey); each use reads the current one.
type Sealer struct{ cur atomic.Pointer[sealer] }

// NewSealer returns a Sealer under a random key.
func NewSealer() *Sealer {
	s := &Sealer{}
	s.cur.Store(newSealer(nil))
	return s
}

// SetKey makes key (32 bytes) the state key: states sealed and tags made
// under the old one no longer open or match.
func (s *Sealer) SetKey(key []byte) { s.cur.Store(newSealer(key)) }

// Tag is a MAC of parts under a key derived from the state key: what a
// replica that shares the key can check without shared state (session
// ids, a proxy's task ids name their owner with one).
func (s *Sealer) Tag(parts ...string) string { return s.cur.Load().tag(parts...) }

func (s *Sealer) seal(st *roundState) string { return s.cur.Load().seal(st) }

func (s *Sealer) open(text, agent string, now time.Time) (*roundState, error) {
	return s.cur.Load().open(text, agent, now)
}

// sealer is a Sealer under one key.
type sealer struct {
	aead cipher.AEAD
	mac  []byte    // HMAC-SHA256 key of Tag
	macs sync.Pool // of *tagger: HMAC-SHA256 under mac, reset before use (tag runs per session-based request)
}

// newSealer returns the sealer of key (32 bytes); a nil key is a random one.
func newSealer(key []byte) *sealer {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(fmt.Sprintf("state key: %v", err)) // validated: 32 bytes
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("pallasgw tags v1"))
	s := &sealer{aead: aead, mac: mac.Sum(nil)}
	s.macs.New = func() any { return &tagger{mac: hmac.New(sha256.New, s.mac)} }
	return s
}

// tag is a short MAC of parts (each length-prefixed): 16 bytes, base64url.
// Replicas that share the state key compute the same tags.
func (s *sealer) tag(parts ...string) string {
	size := 0
	for _, p := range parts {
		size += 8 + len(p)
	}
	t := s.macs.Get().(*tagger)
	msg := slices.Grow(t.msg[:0], size)
	for _, p := range parts {
		msg = binary.BigEndian.AppendUint64(msg, uint64(len(p)))
		msg = append(msg, p...)
	}
	t.mac.Reset()
	t.mac.Write(msg)
	out := t.mac.Sum(t.sum[:0])
	tag := base64.RawURLEncoding.EncodeToString(out[:16])
	if cap(msg) <= 4096 { // a few parts of a request; a larger one is not kept
		t.msg = msg
		s.macs.Put(t)
	}
	return tag
}

// tagger is one HMAC of tag with its buffers, reused.
type tagger struct {
	mac hash.Hash
	msg []byte
	sum [sha256.Size]byte
}

func stateAAD(agent string) []byte { return []byte("pallasgw requestState v1\x00" + agent) }

func (s *sealer) seal(st *roundState) string {
	plain, _ := json.Marshal(st) // strings, numbers and raw JSON: always encodes
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = stateVersion
	_, _ = rand.Read(out[1:])
	out = s.aead.Seal(out, out[1:1+s.aead.NonceSize()], plain, stateAAD(st.Agent))
	return base64.RawURLEncoding.EncodeToString(out)
}

// open returns the state of text for agent, or a *stateError.
func (s *sealer) open(text, agent string, now time.Time) (*roundState, error) {
	invalid := &stateError{stateInvalid, "invalid requestState: it was not issued by this gateway, or it was altered"}
	b, err := base64.RawURLEncoding.DecodeString(text)
	n := s.aead.NonceSize()
	if err != nil || len(b) < 1+n+s.aead.Overhead() || b[0] != stateVersion {
		return nil, invalid
	}
	plain, err := s.aead.Open(nil, b[1:1+n], b[1+n:], stateAAD(agent))
	if err != nil {
		return nil, invalid
	}
	var st roundState
	if json.Unmarshal(plain, &st) != nil || st.Agent != agent {
		return nil, invalid
	}
	if now.Unix() > st.Exp {
		return nil, &stateError{stateExpired, "requestState has expired: call the tool again without it"}
	}
	return &st, nil
}

// digest is a short digest of JSON (a call's arguments, a request's params).
func digest(raw json.RawMessage) string {
	sum := sha256.Sum256(raw)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

var errNotObject = errors.New("must be an object")
