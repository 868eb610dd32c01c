package agents

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// latencyWindow keeps the durations of an agent's latest model calls (at
// most size, none older than config.LatencyMaxAge) for get_health's p95.
// It lives as long as the agent (one snapshot): bounded, no goroutine.
type latencyWindow struct {
	mu    sync.Mutex
	size  int
	next  int // where the next sample goes once full
	calls []latencySample
}

type latencySample struct {
	at time.Time
	d  time.Duration
}

func newLatencyWindow(size int) *latencyWindow {
	return &latencyWindow{size: max(size, 1)}
}

// add records one call that took d, ending now.
func (w *latencyWindow) add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := latencySample{at: time.Now(), d: d}
	if len(w.calls) < w.size {
		w.calls = append(w.calls, s)
		return
	}
	w.calls[w.next] = s
	w.next = (w.next + 1) % w.size
}

// p95 is the 95th percentile (nearest rank) of the recent calls and how
// many there were; n < config.MinLatencySamples says nothing.
func (w *latencyWindow) p95() (time.Duration, int) {
	cutoff := time.Now().Add(-config.LatencyMaxAge)
	w.mu.Lock()
	ds := make([]time.Duration, 0, len(w.calls))
	for _, s := range w.calls {
		if s.at.After(cutoff) {
			ds = append(ds, s.d)
		}
	}
	w.mu.Unlock()
	if len(ds) < config.MinLatencySamples {
		return 0, len(ds)
	}
	slices.Sort(ds)
	rank := (95*len(ds) + 99) / 100 // ceil(0.95 n), 1-based
	return ds[rank-1], len(ds)
}

// latencyFinding is degraded when the agent's recent model calls are slow
// (health.slow_p95), with the figure: "p95 12.3s over the last 20 calls".
func (a *Agent) latencyFinding() *finding {
	limit := a.Config.Health.SlowP95
	if limit <= 0 || a.latency == nil {
		return nil
	}
	p95, n := a.latency.p95()
	if n < config.MinLatencySamples || p95 <= limit {
		return nil
	}
	return &finding{statusDegraded, fmt.Sprintf("model calls are slow: p95 %.1fs over the last %d calls (health.slow_p95 %s)",
		p95.Seconds(), n, limit)}
}
