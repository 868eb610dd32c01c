package quota

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// stores runs f against the memory store and, when redis-server is
// installed, a Redis store on a server of the test's own.
func stores(t *testing.T, f func(t *testing.T, s Store)) {
	t.Run("memory", func(t *testing.T) { f(t, NewMemory()) })
	t.Run("redis", func(t *testing.T) {
		url := startRedis(t)
		s, err := NewRedis(url, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// startRedis starts a redis-server for the test (gwtest.StartRedis: it
// skips without one, unless PALLASGW_E2E_REQUIRE=1) and returns its URL.
func startRedis(t testing.TB) string { return gwtest.StartRedis(t).URL() }

func TestAllow(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		key := "alice-" + t.Name()
		for i := range 5 {
			if ok, _, err := s.Allow(ctx, key, 5); err != nil || !ok {
				t.Fatalf("request %d of a burst of 5: %v %v", i+1, ok, err)
			}
		}
		ok, retry, err := s.Allow(ctx, key, 5)
		if err != nil || ok || retry <= 0 || retry > 13*time.Second {
			t.Fatalf("6th request: ok %v, retry after %v, %v; want refused, about 12 s", ok, retry, err)
		}
		if ok, _, _ := s.Allow(ctx, "bob-"+t.Name(), 5); !ok {
			t.Error("another caller shares alice's bucket")
		}
	})
}

func TestTokens(t *testing.T) {
	stores(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		key := "alice-" + t.Name()
		if n, err := s.Used(ctx, key); err != nil || n != 0 {
			t.Fatalf("used %d %v", n, err)
		}
		for range 3 {
			if err := s.Spend(ctx, key, 40); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.Used(ctx, key); err != nil || n != 120 {
			t.Errorf("used %d %v, want 120", n, err)
		}
	})
}

func TestGuard(t *testing.T) {
	var rejected atomic.Int64
	g := &Guard{Store: NewMemory(), OnReject: func(caller, reason string) {
		if caller == "web" && reason == "tokens_per_day" {
			rejected.Add(1)
		}
	}}
	ctx := context.Background()
	l := Limits{TokensPerDay: 100}
	if err := g.Tokens(ctx, "k", "web", l); err != nil {
		t.Fatal(err)
	}
	g.Spend(ctx, "k", l, 100)
	err := g.Tokens(ctx, "k", "web", l)
	var over *ExceededError
	if !errors.As(err, &over) || !errors.Is(err, ErrExceeded) || !strings.Contains(err.Error(), "retry after") || over.RetryAfter <= 0 || rejected.Load() != 1 {
		t.Errorf("over budget: %v", err)
	}
	var nilGuard *Guard
	if nilGuard.Request(ctx, "k", "web", Limits{RequestsPerMinute: 1}) != nil || nilGuard.Tokens(ctx, "k", "web", l) != nil {
		t.Error("a nil Guard refused")
	}
}

// A store that is down: fail open lets calls through, fail closed refuses
// them; each failure is reported; neither waits past the store's timeout.
func TestGuardStoreDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	s, err := NewRedis("redis://"+addr+"/0", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var failures atomic.Int64
	for _, open := range []bool{true, false} {
		g := &Guard{Store: s, FailOpen: open, OnStoreError: func(string, error) { failures.Add(1) }}
		start := time.Now()
		err := g.Request(context.Background(), "k", "web", Limits{RequestsPerMinute: 10})
		if open != (err == nil) || (!open && !errors.Is(err, ErrStore)) {
			t.Errorf("fail open %v: %v", open, err)
		}
		if err != nil && strings.Contains(err.Error(), addr) {
			t.Errorf("the refusal names the store's address: %v", err) // the log has it, the caller need not
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("a down store held the call %v", d)
		}
	}
	if failures.Load() != 2 {
		t.Errorf("%d store failures reported, want 2", failures.Load())
	}
	if _, err := NewRedis("redis://:hunter2@[bad", time.Second); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad URL: %v", err)
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	s := NewMemory()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Allow(ctx, "caller", 1<<30)
	}
}

// countHook counts the commands a client sends (pipelines count once).
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !handshake(cmds[0]) {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// handshake reports a command of a new connection's setup, which is not a
// round trip of the operation.
func handshake(c redis.Cmder) bool { return c.Name() == "hello" || c.Name() == "client" }

// A rate check with Redis is one round trip (after the script is loaded),
// a token check one, spending one pipeline.
func TestRedisRoundTrips(t *testing.T) {
	s, err := NewRedis(startRedis(t), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &countHook{}
	s.rdb.AddHook(h)
	ctx := context.Background()
	s.Allow(ctx, "warm", 100) // loads the script once
	for _, c := range []struct {
		name string
		op   func()
	}{
		{"allow", func() { s.Allow(ctx, "alice", 100) }},
		{"used", func() { s.Used(ctx, "alice") }},
		{"spend", func() { s.Spend(ctx, "alice", 5) }},
	} {
		before := h.n.Load()
		c.op()
		if n := h.n.Load() - before; n != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, n)
		}
	}
}

func BenchmarkRedisAllow(b *testing.B) {
	s, err := NewRedis(startRedis(b), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for b.Loop() {
		s.Allow(ctx, "caller", 1<<30)
	}
}
