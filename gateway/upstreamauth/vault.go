package upstreamauth

// The vault: a principal's tokens for a server, sealed with AES-256-GCM
// under credentials.key (the principal, server and issuer as additional
// data, so an entry copied under another principal, server or issuer does
// not open), kept in the store and served from an in-process cache that
// every replica drops an entry of when another replica writes it.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Token is what the vault keeps of one connection. It has no String
// method on purpose and is never logged.
type Token struct {
	Access  string    `json:"a"`
	Refresh string    `json:"r,omitempty"`
	Expiry  time.Time `json:"e,omitzero"` // zero: unknown (never refreshed ahead)
	Scope   string    `json:"s,omitempty"`
	// Created is when the person connected; Issued when this access
	// token was issued.
	Created time.Time `json:"c"`
	Issued  time.Time `json:"i,omitzero"`
}

// refreshDue reports a token to refresh before use: it expires within
// refreshMargin, or within the last quarter of its life when that is
// shorter (a token that lives 4 s is refreshed after 3 s, not every time).
func (t *Token) refreshDue(now time.Time) bool {
	if t.Expiry.IsZero() {
		return false
	}
	margin := refreshMargin
	if life := t.Expiry.Sub(t.Issued); !t.Issued.IsZero() && life/4 < margin {
		margin = life / 4
	}
	return t.Expiry.Sub(now) < margin
}

// sealer seals and opens with the current key and the previous ones.
type sealer struct {
	keys []cipher.AEAD // [0] seals; all open
	ids  [][4]byte     // a short digest of each key, stored in front
}

const sealVersion = 1

func newSealer(key []byte, previous [][]byte) (*sealer, error) {
	s := &sealer{}
	for _, k := range append([][]byte{key}, previous...) {
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("credentials key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("credentials key: %w", err)
		}
		sum := sha256.Sum256(append([]byte("pallasgw upstream key id\x00"), k...))
		s.keys = append(s.keys, aead)
		s.ids = append(s.ids, [4]byte(sum[:4]))
	}
	return s, nil
}

// aad binds a sealed value to what it is for.
func aad(kind, principal, server, issuer string) []byte {
	return []byte(fmt.Sprintf("pallasgw-upstream\x00%d\x00%s\x00%s\x00%s\x00%s", sealVersion, kind, principal, server, issuer))
}

// seal returns version | key id | nonce | ciphertext.
func (s *sealer) seal(plain, ad []byte) []byte {
	aead := s.keys[0]
	out := make([]byte, 0, 1+4+aead.NonceSize()+len(plain)+aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, s.ids[0][:]...)
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, ad)
}

var errUnsealed = errors.New("a sealed credential does not open (another key, principal, server or issuer)")

// open opens a value sealed by seal, with the key that sealed it; stale
// reports that key was a previous one.
func (s *sealer) open(sealed, ad []byte) (plain []byte, stale bool, err error) {
	if len(sealed) < 5 || sealed[0] != sealVersion {
		return nil, false, errUnsealed
	}
	for i, id := range s.ids {
		if [4]byte(sealed[1:5]) != id {
			continue
		}
		aead := s.keys[i]
		rest := sealed[5:]
		if len(rest) < aead.NonceSize() {
			return nil, false, errUnsealed
		}
		plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], ad)
		if err != nil {
			return nil, false, errUnsealed
		}
		return plain, i > 0, nil
	}
	return nil, false, errUnsealed
}

// vault keeps tokens per principal and server.
type vault struct {
	sealer *sealer
	kv     KV

	// observe is told when an entry's state changes (nil: not told).
	observe func(server, from, to string)

	mu    sync.Mutex
	cache map[string]cached // by entryKey
	// epoch counts the entries changed, by this replica's writes (write,
	// expire, purge) or another's (drop). A store read during which it
	// moved may predate the change and is not cached (rememberRead): a
	// renewal's token, once written, is what every call that starts after
	// it gets, never the token it replaced.
	epoch uint64
	// changes wakes the calls waiting for an entry to change (a person
	// connecting): closed and replaced at each change of any entry.
	changes chan struct{}
}

// cached is a token read or written by this replica; tok nil: known
// absent, until at+absentFor (a replica that missed an invalidation reads
// the store again by then).
type cached struct {
	tok    *Token
	issuer string
	at     time.Time
	server string
	failed bool // tok nil because its refresh failed
}

// Connection states (pallasgw_upstream_connections{state}).
const (
	stateConnected = "connected"
	stateExpired   = "expired"
	stateFailed    = "failed"
)

// state is the connection state an entry counts as, "" for none.
func (c cached) state(now time.Time) string {
	switch {
	case c.failed:
		return stateFailed
	case c.tok == nil:
		return ""
	case !c.tok.Expiry.IsZero() && now.After(c.tok.Expiry) && c.tok.Refresh == "":
		return stateExpired
	}
	return stateConnected
}

const absentFor = 30 * time.Second

// maxCached bounds the cache; past it, arbitrary entries go (they are
// read again from the store when needed).
const maxCached = 20000

// invalidations is the channel on which a replica that wrote an entry
// tells the others to drop theirs.
const invalidations = "pallasgw:upstream:invalidate"

// entryKey names principal's entry for server in the cache and (prefixed)
// in the store: a digest, so that the store's key names nobody.
func entryKey(principal, server string) string {
	sum := sha256.Sum256([]byte(principal + "\x00" + server))
	return hex.EncodeToString(sum[:16])
}

func storeKey(k string) string { return "upstream:token:" + k }

// indexKey names the store's index of server's entries (their entry
// keys), by which a reload that drops the server deletes them.
func indexKey(server string) string { return "upstream:tokens-of:" + digest(server) }

// The index of a server's entries keeps its newest maxIndexed members,
// for indexTTL after the last connection.
const (
	maxIndexed = 1 << 20
	indexTTL   = 400 * 24 * time.Hour
)

func newVault(s *sealer, kv KV) *vault {
	return &vault{sealer: s, kv: kv, cache: map[string]cached{}, changes: make(chan struct{})}
}

// listen drops cache entries other replicas wrote, until ctx ends.
func (v *vault) listen(ctx context.Context) error {
	return v.kv.Subscribe(ctx, invalidations, func(msg []byte) { v.drop(string(msg)) })
}

func (v *vault) drop(k string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.epoch++
	if old, ok := v.cache[k]; ok {
		v.changed(old.server, old.state(time.Now()), "")
		delete(v.cache, k)
	}
	v.wakeLocked()
}

// changed returns a channel closed at the next change of any entry (this
// replica's write, or another's invalidation).
func (v *vault) changedCh() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changes
}

func (v *vault) wakeLocked() {
	close(v.changes)
	v.changes = make(chan struct{})
}

func (v *vault) changed(server, from, to string) {
	if from != to && v.observe != nil {
		v.observe(server, from, to)
	}
}

// get returns principal's token for server sealed with issuer, nil when
// there is none (or one that does not open: for another issuer, or under a
// key no longer configured). A cached answer costs no store read.
func (v *vault) get(ctx context.Context, principal, server, issuer string) (*Token, error) {
	k := entryKey(principal, server)
	v.mu.Lock()
	c, ok := v.cache[k]
	epoch := v.epoch
	v.mu.Unlock()
	if ok && c.issuer == issuer && (c.tok != nil || time.Since(c.at) < absentFor) {
		return c.tok, nil
	}
	raw, err := v.kv.Get(ctx, storeKey(k))
	if err != nil {
		return nil, err
	}
	var tok *Token
	if len(raw) > 0 {
		plain, stale, err := v.sealer.open(raw, aad("token", principal, server, issuer))
		if err == nil {
			tok = &Token{}
			if json.Unmarshal(plain, tok) != nil {
				tok = nil
			}
		}
		if tok != nil && stale {
			_ = v.put(ctx, principal, server, issuer, tok) // sealed again with the current key
		}
	}
	v.rememberRead(k, cached{tok: tok, issuer: issuer, at: time.Now(), server: server}, epoch)
	return tok, nil
}

// load reads principal's token for server from the store, past the cache
// (nil: none, or one that does not open).
func (v *vault) load(ctx context.Context, principal, server, issuer string) (*Token, error) {
	raw, err := v.kv.Get(ctx, storeKey(entryKey(principal, server)))
	if err != nil || len(raw) == 0 {
		return nil, err
	}
	plain, _, err := v.sealer.open(raw, aad("token", principal, server, issuer))
	if err != nil {
		return nil, nil
	}
	tok := &Token{}
	if json.Unmarshal(plain, tok) != nil {
		return nil, nil
	}
	return tok, nil
}

// put stores tok (nil: deletes the entry) and tells the other replicas.
func (v *vault) put(ctx context.Context, principal, server, issuer string, tok *Token) error {
	return v.write(ctx, principal, server, issuer, tok, false)
}

// fail deletes the entry of a connection whose refresh failed.
func (v *vault) fail(ctx context.Context, principal, server, issuer string) error {
	return v.write(ctx, principal, server, issuer, nil, true)
}

func (v *vault) write(ctx context.Context, principal, server, issuer string, tok *Token, failed bool) error {
	k := entryKey(principal, server)
	var val []byte
	ttl := time.Millisecond // a deleted entry: gone at once
	if tok != nil {
		plain, err := json.Marshal(tok)
		if err != nil {
			return err
		}
		val, ttl = v.sealer.seal(plain, aad("token", principal, server, issuer)), 0
		// Indexed before it is stored: an entry is never where a purge
		// (purge) cannot find it.
		if err := v.kv.IndexAdd(ctx, indexKey(server), k, maxIndexed, indexTTL); err != nil {
			return err
		}
	}
	if err := v.kv.Set(ctx, storeKey(k), val, ttl); err != nil {
		v.drop(k)
		return err
	}
	v.mu.Lock()
	v.epoch++
	v.rememberLocked(k, cached{tok: tok, issuer: issuer, at: time.Now(), server: server, failed: failed})
	v.mu.Unlock()
	_, _ = v.kv.Publish(ctx, invalidations, []byte(k)) // a replica that misses it reads the store on its next miss only
	return nil
}

// purge deletes every entry of server from the store (and this
// replica's cache, and tells the others), and the server's index; it
// returns how many it deleted.
func (v *vault) purge(ctx context.Context, server string) (int, error) {
	keys, err := v.kv.IndexMembers(ctx, indexKey(server))
	if err != nil {
		return 0, err
	}
	for i, k := range keys {
		if err := v.kv.Set(ctx, storeKey(k), nil, time.Millisecond); err != nil {
			return i, err
		}
		v.drop(k)
		_, _ = v.kv.Publish(ctx, invalidations, []byte(k))
	}
	v.mu.Lock()
	v.epoch++
	for k, c := range v.cache { // entries read before they were indexed among them
		if c.server == server {
			v.changed(server, c.state(time.Now()), "")
			delete(v.cache, k)
		}
	}
	v.wakeLocked()
	v.mu.Unlock()
	return len(keys), v.kv.Set(ctx, indexKey(server), nil, time.Millisecond)
}

// readEpoch is the epoch a store read starts in (rememberRead).
func (v *vault) readEpoch() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.epoch
}

// rememberRead caches c, read from the store in epoch, unless an entry
// changed since: the read may be older than that change.
func (v *vault) rememberRead(k string, c cached, epoch uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.epoch == epoch {
		v.rememberLocked(k, c)
	}
}

// rememberLocked caches c as k's entry; v.mu is held.
func (v *vault) rememberLocked(k string, c cached) {
	now := time.Now()
	old, ok := v.cache[k]
	if !ok && len(v.cache) >= maxCached {
		for ok := range v.cache {
			gone := v.cache[ok]
			v.changed(gone.server, gone.state(now), "")
			delete(v.cache, ok)
			break
		}
	}
	from := ""
	if ok {
		from = old.state(now)
	}
	if ok && old.failed && c.tok == nil {
		c.failed = true // still failed until connected again
	}
	v.changed(c.server, from, c.state(now))
	v.cache[k] = c
	v.wakeLocked()
}

// counts is this replica's connections by server and state.
func (v *vault) counts() map[string]map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	out := map[string]map[string]int{}
	for _, c := range v.cache {
		st := c.state(now)
		if st == "" || c.server == "" {
			continue
		}
		if out[c.server] == nil {
			out[c.server] = map[string]int{}
		}
		out[c.server][st]++
	}
	return out
}

// expire marks principal's cached token for server as due for renewal (a
// downstream refused it); the store's copy is replaced by the renewal.
func (v *vault) expire(principal, server, issuer string) {
	k := entryKey(principal, server)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.epoch++ // a read of the refused token in flight must not cache it again
	c, ok := v.cache[k]
	if !ok || c.tok == nil || c.issuer != issuer {
		return
	}
	t := *c.tok
	t.Expiry, t.Issued = time.Now(), time.Time{}
	c.tok = &t
	v.cache[k] = c
}
