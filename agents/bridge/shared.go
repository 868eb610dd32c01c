package bridge

// What the bridge keeps for the gateway's lifetime, handed to every
// snapshot's bridges: a retry must find its parked call after a reload has
// swapped the endpoint, and the bridge, that the call began on. Each part
// has one job: the state codec (Sealer), the calls parked for a retry
// (parkedCalls), the bridge's metrics (counters).

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pallasgw/pallasgw/metrics"
)

// Shared is the bridge's state across snapshots.
type Shared struct {
	Sealer  *Sealer // seals requestState; the gateway's state key
	metrics counters
	parked  parkedCalls
	// now is the bridge's clock: a state's expiry when sealed and when
	// opened, a parked call's. time.Now; a test sets it before use, so
	// that a state sealed in a fixture opens at the fixture's time.
	now func() time.Time
}

// NewShared returns the bridge's state, sealing with s.
func NewShared(s *Sealer) *Shared {
	sh := &Shared{Sealer: s, now: time.Now}
	sh.parked.calls = map[string]*inputCall{}
	sh.parked.metrics = &sh.metrics
	return sh
}

// SetMetrics sets the metrics of the input-required bridge.
func (s *Shared) SetMetrics(m *metrics.Metrics) { s.metrics.m.Store(m) }

func (s *Shared) open(text, agent string) (*roundState, error) {
	return s.Sealer.open(text, agent, s.now())
}

// rejected counts a retry refused for its requestState or inputResponses.
func (s *Shared) rejected(reason string) { s.metrics.rejected(reason) }

// count counts an input-required round by outcome.
func (s *Shared) count(outcome string) { s.metrics.count(outcome) }

func (s *Shared) park(call *inputCall)        { s.parked.park(call, s.now()) }
func (s *Shared) unpark(id string) *inputCall { return s.parked.unpark(id) }
func (s *Shared) drop(call *inputCall)        { s.parked.drop(call) }

// CancelParked cancels every parked call (the gateway shuts down): each
// downstream request waiting for a caller gets an error at once.
func (s *Shared) CancelParked() { s.parked.cancelAll() }

// counters are the bridge's metrics, once set.
type counters struct {
	m atomic.Pointer[metrics.Metrics]
}

func (c *counters) rejected(reason string) {
	if m := c.m.Load(); m != nil {
		m.RequestStateRejections.WithLabelValues(reason).Inc()
	}
}

func (c *counters) count(outcome string) {
	if m := c.m.Load(); m != nil {
		m.InputRequired.WithLabelValues(outcome).Inc()
	}
}

func (c *counters) parked(n int) {
	if m := c.m.Load(); m != nil {
		m.InputRequiredParked.Set(float64(n))
	}
}

// parkedCalls are the calls kept for their retry, by the id their state
// carries: at most maxParked, each until its state expires.
type parkedCalls struct {
	mu      sync.Mutex
	calls   map[string]*inputCall // guarded by mu
	metrics *counters
}

// park keeps call for its retry, dropping expired calls and, past
// maxParked, the one that expires first (its retry replays).
func (p *parkedCalls) park(call *inputCall, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.calls {
		if now.After(c.exp) {
			c.cancel()
			delete(p.calls, id)
		}
	}
	if len(p.calls) >= maxParked {
		var first *inputCall
		for _, c := range p.calls {
			if first == nil || c.exp.Before(first.exp) {
				first = c
			}
		}
		first.cancel()
		delete(p.calls, first.id)
	}
	p.calls[call.id] = call
	p.metrics.parked(len(p.calls))
}

// unpark takes the call parked under id (nil: none here).
func (p *parkedCalls) unpark(id string) *inputCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	call := p.calls[id]
	delete(p.calls, id)
	p.metrics.parked(len(p.calls))
	return call
}

// drop takes call out of the table if it is parked there.
func (p *parkedCalls) drop(call *inputCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls[call.id] == call {
		delete(p.calls, call.id)
		p.metrics.parked(len(p.calls))
	}
}

// cancelAll cancels and drops every parked call.
func (p *parkedCalls) cancelAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.calls {
		c.cancel()
		delete(p.calls, id)
	}
	p.metrics.parked(len(p.calls))
}
