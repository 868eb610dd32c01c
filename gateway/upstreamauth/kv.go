package upstreamauth

// Where the vault, the registered clients, the connect links and the
// flows in progress live: the shared session store (sessions.store
// redis://), or this process's memory.

import (
	"context"
	"sync"
	"time"
)

// KV is what the package needs of the session store (*sessions.Redis and
// the gateway's wrapper of it implement it). An empty value is no value.
type KV interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Claim is Set unless key holds a value; true when it set it.
	Claim(ctx context.Context, key string, val []byte, ttl time.Duration) (bool, error)
	// IndexAdd adds member to the index key (its newest max members kept,
	// for ttl after the last addition); IndexMembers lists them; Set on
	// key with an empty value deletes the index.
	IndexAdd(ctx context.Context, key, member string, max int, ttl time.Duration) error
	IndexMembers(ctx context.Context, key string) ([]string, error)
	Publish(ctx context.Context, channel string, msg []byte) (int64, error)
	Subscribe(ctx context.Context, channel string, fn func([]byte)) error
}

// memoryKV is the store of a gateway without a shared one: bounded, with
// expiry; nobody else to tell of a write.
type memoryKV struct {
	mu sync.Mutex
	m  map[string]memoryEntry
	ix map[string]map[string]bool // indexes (IndexAdd), without expiry
}

type memoryEntry struct {
	val     []byte
	expires time.Time // zero: never
}

// maxMemoryEntries bounds the memory store; past it, expired entries go,
// then arbitrary ones.
const maxMemoryEntries = 100000

func newMemoryKV() *memoryKV {
	return &memoryKV{m: map[string]memoryEntry{}, ix: map[string]map[string]bool{}}
}

func (m *memoryKV) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	if !ok || (!e.expires.IsZero() && time.Now().After(e.expires)) {
		delete(m.m, key)
		return nil, nil
	}
	return e.val, nil
}

func (m *memoryKV) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ix, key)
	if len(val) == 0 {
		delete(m.m, key)
		return nil
	}
	if _, ok := m.m[key]; !ok && len(m.m) >= maxMemoryEntries {
		m.makeRoomLocked()
	}
	e := memoryEntry{val: append([]byte(nil), val...)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	m.m[key] = e
	return nil
}

func (m *memoryKV) Claim(_ context.Context, key string, val []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.m[key]; ok && (e.expires.IsZero() || time.Now().Before(e.expires)) {
		return false, nil
	}
	if len(m.m) >= maxMemoryEntries {
		m.makeRoomLocked()
	}
	e := memoryEntry{val: append([]byte(nil), val...)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl)
	}
	m.m[key] = e
	return true, nil
}

func (m *memoryKV) makeRoomLocked() {
	now := time.Now()
	for k, e := range m.m {
		if !e.expires.IsZero() && now.After(e.expires) {
			delete(m.m, k)
		}
	}
	for k := range m.m {
		if len(m.m) < maxMemoryEntries {
			return
		}
		delete(m.m, k)
	}
}

func (m *memoryKV) IndexAdd(_ context.Context, key, member string, max int, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ix := m.ix[key]
	if ix == nil {
		ix = map[string]bool{}
		m.ix[key] = ix
	}
	for old := range ix {
		if len(ix) < max {
			break
		}
		delete(ix, old) // an arbitrary one, not the oldest: the memory store keeps no order
	}
	ix[member] = true
	return nil
}

func (m *memoryKV) IndexMembers(_ context.Context, key string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.ix[key]))
	for member := range m.ix[key] {
		out = append(out, member)
	}
	return out, nil
}

func (m *memoryKV) Publish(context.Context, string, []byte) (int64, error) { return 0, nil }

func (m *memoryKV) Subscribe(context.Context, string, func([]byte)) error { return nil }
