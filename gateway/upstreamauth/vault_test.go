package upstreamauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"
)

func randomKey(t *testing.T) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealer(t *testing.T) {
	k1, k2 := randomKey(t), randomKey(t)
	s1, err := newSealer(k1, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("access-token-value")
	sealed := s1.seal(secret, aad("token", "token:alice", "gh", "https://as"))
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed value holds the plain text")
	}
	for _, tc := range []struct {
		name                      string
		principal, server, issuer string
		ok                        bool
	}{
		{"same binding", "token:alice", "gh", "https://as", true},
		{"another principal", "token:bob", "gh", "https://as", false},
		{"another server", "token:alice", "linear", "https://as", false},
		{"another issuer", "token:alice", "gh", "https://evil", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, _, err := s1.open(sealed, aad("token", tc.principal, tc.server, tc.issuer))
			if tc.ok != (err == nil) || (tc.ok && !bytes.Equal(plain, secret)) {
				t.Fatalf("open: %q, %v (want ok %v)", plain, err, tc.ok)
			}
		})
	}
	t.Run("rotation: the previous key opens, stale", func(t *testing.T) {
		s2, _ := newSealer(k2, [][]byte{k1})
		plain, stale, err := s2.open(sealed, aad("token", "token:alice", "gh", "https://as"))
		if err != nil || !stale || !bytes.Equal(plain, secret) {
			t.Fatalf("open with previous key: %q stale=%v %v", plain, stale, err)
		}
	})
	t.Run("a key no longer configured does not open", func(t *testing.T) {
		s3, _ := newSealer(k2, nil)
		if _, _, err := s3.open(sealed, aad("token", "token:alice", "gh", "https://as")); !errors.Is(err, errUnsealed) {
			t.Fatalf("open without the key: %v", err)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		bad := append([]byte(nil), sealed...)
		bad[len(bad)-1] ^= 1
		if _, _, err := s1.open(bad, aad("token", "token:alice", "gh", "https://as")); err == nil {
			t.Fatal("a tampered value opened")
		}
	})
}

// fanout is a KV shared by replicas whose Publish reaches every subscriber.
type fanout struct {
	*memoryKV
	mu   sync.Mutex
	subs []func([]byte)
}

func (f *fanout) Publish(_ context.Context, _ string, msg []byte) (int64, error) {
	f.mu.Lock()
	subs := append([]func([]byte){}, f.subs...)
	f.mu.Unlock()
	for _, fn := range subs {
		fn(msg)
	}
	return int64(len(subs)), nil
}

func (f *fanout) Subscribe(_ context.Context, _ string, fn func([]byte)) error {
	f.mu.Lock()
	f.subs = append(f.subs, fn)
	f.mu.Unlock()
	return nil
}

// countingKV counts reads.
type countingKV struct {
	KV
	mu    sync.Mutex
	reads int
}

func (c *countingKV) Get(ctx context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.KV.Get(ctx, key)
}

func (c *countingKV) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.reads }

func TestVault(t *testing.T) {
	ctx := context.Background()
	k1, k2 := randomKey(t), randomKey(t)
	shared := &fanout{memoryKV: newMemoryKV()}
	s1, _ := newSealer(k1, nil)
	ra, rb := &countingKV{KV: shared}, &countingKV{KV: shared}
	a, b := newVault(s1, ra), newVault(s1, rb)
	for _, v := range []*vault{a, b} {
		if err := v.listen(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tok := &Token{Access: "at-1", Refresh: "rt-1", Expiry: time.Now().Add(time.Hour).Truncate(time.Second), Created: time.Now().Truncate(time.Second)}

	if got, err := b.get(ctx, "token:alice", "gh", "https://as"); err != nil || got != nil {
		t.Fatalf("before connecting: %v %v", got, err)
	}
	if err := a.put(ctx, "token:alice", "gh", "https://as", tok); err != nil {
		t.Fatal(err)
	}
	got, err := b.get(ctx, "token:alice", "gh", "https://as")
	if err != nil || got == nil || got.Access != "at-1" || got.Refresh != "rt-1" {
		t.Fatalf("replica b after a's write (invalidated): %+v %v", got, err)
	}
	reads := rb.count()
	for range 100 {
		if got, _ := b.get(ctx, "token:alice", "gh", "https://as"); got == nil {
			t.Fatal("cached token lost")
		}
	}
	if rb.count() != reads {
		t.Fatalf("%d store reads for cached gets, want 0", rb.count()-reads)
	}
	if got, _ := b.get(ctx, "token:bob", "gh", "https://as"); got != nil {
		t.Fatal("bob got alice's token")
	}
	if got, _ := b.get(ctx, "token:alice", "gh", "https://other-issuer"); got != nil {
		t.Fatal("a token of another issuer was served")
	}

	t.Run("an entry moved to another key does not decrypt", func(t *testing.T) {
		raw, _ := shared.Get(ctx, storeKey(entryKey("token:alice", "gh")))
		if err := shared.Set(ctx, storeKey(entryKey("token:bob", "gh")), raw, 0); err != nil {
			t.Fatal(err)
		}
		c := newVault(s1, shared)
		if got, err := c.get(ctx, "token:bob", "gh", "https://as"); err != nil || got != nil {
			t.Fatalf("alice's sealed entry under bob's key opened: %+v %v", got, err)
		}
		if err := shared.Set(ctx, storeKey(entryKey("token:alice", "linear")), raw, 0); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.get(ctx, "token:alice", "linear", "https://as"); got != nil {
			t.Fatal("alice's gh entry opened as her linear entry")
		}
	})

	t.Run("rotation", func(t *testing.T) {
		s2, _ := newSealer(k2, [][]byte{k1})
		c := newVault(s2, shared)
		got, err := c.get(ctx, "token:alice", "gh", "https://as")
		if err != nil || got == nil || got.Access != "at-1" {
			t.Fatalf("with k1 as a previous key: %+v %v", got, err)
		}
		// Opened with the previous key, it was sealed again with k2: a
		// gateway that has only k2 now opens it.
		only2, _ := newSealer(k2, nil)
		if got, _ := newVault(only2, shared).get(ctx, "token:alice", "gh", "https://as"); got == nil {
			t.Fatal("not re-sealed with the current key")
		}
	})

	t.Run("delete reaches the other replica", func(t *testing.T) {
		if err := a.put(ctx, "token:alice", "gh", "https://as", nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := b.get(ctx, "token:alice", "gh", "https://as"); got != nil {
			t.Fatal("replica b still serves a deleted token")
		}
	})
}

// slowGetKV holds the next Get after it has read the store, until let is
// closed: a read that a write overtakes.
type slowGetKV struct {
	KV
	read chan struct{} // closed once the held Get has read
	let  chan struct{}
	once sync.Once
}

func (s *slowGetKV) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := s.KV.Get(ctx, key)
	held := false
	s.once.Do(func() { held = true })
	if held {
		close(s.read)
		<-s.let
	}
	return v, err
}

// TestVaultReadOvertakenByWrite: a store read of the token a renewal
// replaces, finished after the renewal wrote its token, does not put the
// replaced token back in the cache: calls that start after the renewal
// get the new token, from memory.
func TestVaultReadOvertakenByWrite(t *testing.T) {
	s, _ := newSealer(randomKey(t), nil)
	kv := &slowGetKV{KV: newMemoryKV(), read: make(chan struct{}), let: make(chan struct{})}
	v := newVault(s, kv)
	ctx := context.Background()
	old, renewed := &Token{Access: "old-token", Expiry: time.Now().Add(time.Hour)}, &Token{Access: "new-token", Expiry: time.Now().Add(time.Hour)}
	if err := newVault(s, kv.KV).put(ctx, "token:alice", "gh", "https://as", old); err != nil { // another replica's write
		t.Fatal(err)
	}
	got := make(chan *Token, 1)
	go func() {
		tok, _ := v.get(ctx, "token:alice", "gh", "https://as") // a cache miss: reads the old token, held
		got <- tok
	}()
	<-kv.read
	if err := v.put(ctx, "token:alice", "gh", "https://as", renewed); err != nil { // the renewal
		t.Fatal(err)
	}
	close(kv.let)
	if tok := <-got; tok == nil || tok.Access != "old-token" {
		t.Fatalf("the overtaken read answered %+v", tok)
	}
	tok, err := v.get(ctx, "token:alice", "gh", "https://as")
	if err != nil || tok == nil || tok.Access != "new-token" {
		t.Fatalf("a call after the renewal got %+v (%v), want the new token", tok, err)
	}
}
