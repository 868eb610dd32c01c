package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// CodeCounters is the children of HTTPRequests for one handler, by status
// code. WithLabelValues formats the code, hashes both labels and takes the
// vector's lock on every request (test/bench/README.md, P7); the cache is read without a
// lock or an allocation. It holds at most one entry per status code
// net/http accepts (100–999), the same bound as the series themselves.
type CodeCounters struct {
	vec     *prometheus.CounterVec
	handler string

	mu    sync.Mutex                                 // serialises adding a code
	codes atomic.Pointer[map[int]prometheus.Counter] // copied on write, never modified
}

// HTTPRequestsFor returns the request counters of handler.
func (m *Metrics) HTTPRequestsFor(handler string) *CodeCounters {
	c := &CodeCounters{vec: m.HTTPRequests, handler: handler}
	c.codes.Store(&map[int]prometheus.Counter{})
	return c
}

// Code returns the counter of the status code.
func (c *CodeCounters) Code(code int) prometheus.Counter {
	if ctr, ok := (*c.codes.Load())[code]; ok {
		return ctr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.codes.Load()
	if ctr, ok := old[code]; ok {
		return ctr
	}
	ctr := c.vec.WithLabelValues(c.handler, strconv.Itoa(code))
	codes := make(map[int]prometheus.Counter, len(old)+1)
	for k, v := range old {
		codes[k] = v
	}
	codes[code] = ctr
	c.codes.Store(&codes)
	return ctr
}
