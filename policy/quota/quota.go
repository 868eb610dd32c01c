// Package quota bounds what each caller may spend: a request
// rate (a token bucket per caller) and LLM tokens per day. The counters live
// in a Store: in this process (the default), or in Redis so that replicas
// share them. It decides nothing about who the caller is or what its limits
// are: the gateway and the agents ask it with a key and a limit.
package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Store keeps the counters.
type Store interface {
	// Allow takes one request from key's bucket of perMinute requests per
	// minute (bursts up to perMinute). When the bucket is empty it returns
	// false and how long until a request would be allowed.
	Allow(ctx context.Context, key string, perMinute int) (ok bool, retryAfter time.Duration, err error)
	// Used returns the tokens key has spent in the current day (UTC).
	Used(ctx context.Context, key string) (int64, error)
	// Spend adds n tokens to key's current day.
	Spend(ctx context.Context, key string, n int64) error
	Close() error
}

// DayEnd is when the current day's token budgets start again (UTC midnight).
func DayEnd(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// dayKey is key's counter of the current day.
func dayKey(key string, now time.Time) string { return key + ":" + now.UTC().Format("2006-01-02") }

// ErrExceeded is wrapped by every over-the-limit error.
var ErrExceeded = errors.New("quota exceeded")

// ExceededError says which limit a caller reached and when it may try again.
type ExceededError struct {
	Caller     string
	Reason     string // requests_per_minute | tokens_per_day
	Limit      int64
	RetryAfter time.Duration
}

func (e *ExceededError) Error() string {
	switch e.Reason {
	case "tokens_per_day":
		return fmt.Sprintf("caller %s has used its budget of %d LLM tokens for today; retry after %s (in %s)",
			e.Caller, e.Limit, time.Now().Add(e.RetryAfter).UTC().Format(time.RFC3339), e.RetryAfter.Round(time.Second))
	}
	return fmt.Sprintf("caller %s is over its limit of %d requests per minute; retry in %s", e.Caller, e.Limit, e.RetryAfter.Round(time.Second))
}

func (e *ExceededError) Unwrap() error { return ErrExceeded }

// Memory is a Store of this process. Buckets are golang.org/x/time/rate
// limiters; at most maxKeys keys are kept (the idlest go first), so that
// callers with ever new identities cannot grow it without bound.
type Memory struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	days    map[string]int64 // dayKey → tokens
	now     func() time.Time
}

type bucket struct {
	lim       *rate.Limiter
	perMinute int
	used      time.Time
}

const maxKeys = 100_000

// NewMemory returns an empty in-process Store.
func NewMemory() *Memory {
	return &Memory{buckets: map[string]*bucket{}, days: map[string]int64{}, now: time.Now}
}

func (m *Memory) Allow(_ context.Context, key string, perMinute int) (bool, time.Duration, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[key]
	if b == nil || b.perMinute != perMinute {
		if b == nil && len(m.buckets) >= maxKeys {
			m.evict(now)
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute), perMinute: perMinute}
		m.buckets[key] = b
	}
	b.used = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d, nil
	}
	return true, 0, nil
}

// evict drops buckets that are full again (idle for a minute), or else the
// idlest half. Callers hold mu.
func (m *Memory) evict(now time.Time) {
	for k, b := range m.buckets {
		if now.Sub(b.used) > time.Minute {
			delete(m.buckets, k)
		}
	}
	for k := range m.buckets {
		if len(m.buckets) < maxKeys/2 {
			break
		}
		delete(m.buckets, k)
	}
}

func (m *Memory) Used(_ context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.days[dayKey(key, m.now())], nil
}

func (m *Memory) Spend(_ context.Context, key string, n int64) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.days) >= maxKeys {
		today := now.UTC().Format("2006-01-02")
		for k := range m.days {
			if len(k) < len(today) || k[len(k)-len(today):] != today {
				delete(m.days, k)
			}
		}
	}
	m.days[dayKey(key, now)] += n
	return nil
}

func (m *Memory) Close() error { return nil }

// Limits are one caller's (policy.callers.<name>.limits or
// policy.default.limits); 0 means unlimited.
type Limits struct {
	RequestsPerMinute int
	TokensPerDay      int64
}

// Guard applies Limits with a Store, and decides what a store failure
// means: with FailOpen the request goes on, else it is refused. A nil Guard
// allows everything.
type Guard struct {
	Store    Store
	FailOpen bool
	// OnReject is told of every refusal (caller is the bounded policy
	// name, reason the limit's).
	OnReject func(caller, reason string)
	// OnStoreError is told of every failed store operation.
	OnStoreError func(op string, err error)
}

// ErrStore wraps a store failure that refuses a request (FailOpen off).
var ErrStore = errors.New("the quota store is unavailable")

// Request takes one request for key (the caller's identity) under l;
// label names the caller's rule in metrics and messages.
func (g *Guard) Request(ctx context.Context, key, label string, l Limits) error {
	if g == nil || l.RequestsPerMinute <= 0 {
		return nil
	}
	ok, retry, err := g.Store.Allow(ctx, key, l.RequestsPerMinute)
	if err != nil {
		return g.storeFailed("rate", err)
	}
	if !ok {
		g.reject(label, "requests_per_minute")
		return &ExceededError{Caller: label, Reason: "requests_per_minute", Limit: int64(l.RequestsPerMinute), RetryAfter: max(retry, time.Second)}
	}
	return nil
}

// Tokens checks that key has LLM tokens left for today under l.
func (g *Guard) Tokens(ctx context.Context, key, label string, l Limits) error {
	if g == nil || l.TokensPerDay <= 0 {
		return nil
	}
	used, err := g.Store.Used(ctx, key)
	if err != nil {
		return g.storeFailed("tokens", err)
	}
	if used >= l.TokensPerDay {
		g.reject(label, "tokens_per_day")
		return &ExceededError{Caller: label, Reason: "tokens_per_day", Limit: l.TokensPerDay, RetryAfter: time.Until(DayEnd(time.Now()))}
	}
	return nil
}

// Spend records n LLM tokens of key (only when its rule has a budget).
func (g *Guard) Spend(ctx context.Context, key string, l Limits, n int64) {
	if g == nil || l.TokensPerDay <= 0 || n <= 0 {
		return
	}
	if err := g.Store.Spend(context.WithoutCancel(ctx), key, n); err != nil && g.OnStoreError != nil {
		g.OnStoreError("spend", err)
	}
}

func (g *Guard) storeFailed(op string, err error) error {
	if g.OnStoreError != nil {
		g.OnStoreError(op, err)
	}
	if g.FailOpen {
		return nil
	}
	// The cause (the store's address, say) is OnStoreError's to log; the
	// caller gets no more than that the store is down.
	return ErrStore
}

func (g *Guard) reject(caller, reason string) {
	if g.OnReject != nil {
		g.OnReject(caller, reason)
	}
}
