package bench

import (
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
	"github.com/pallasgw/pallasgw/test/load"
)

// Replicas and the shared session store (sessions.store): session-based
// tools/call through 3 replicas of one proxy config (one state_key), each
// request sent to the next replica in turn (a balancer without affinity),
// with the store in a redis-server against the same 3 replicas without it
// (memory), in the same rounds (ABBA), at 64 callers. With the store a
// replica reads it once per caller it has no downstream session for (it
// adopts the session another replica opened), never per call. Target: the
// store costs ≤ 10% of throughput (SPEC §12, §17).
//
// Then 200 distinct callers (each its own session, so its own downstream
// session under session_scope caller) against one replica of a server
// capped at max_sessions: 64: throughput, errors and the replica's RSS,
// with the evictions that cap makes.
func BenchmarkReplicasStore(b *testing.B) {
	redisURL := gwtest.StartRedis(b).URL()
	d := newDownstream(b)
	replicas := func(store string) []*gateway {
		gs := make([]*gateway, 3)
		for i := range gs {
			gs[i] = startGateway(b, fmt.Sprintf(replicasBenchConfig, benchStateKey, store, d.url(), 64))
		}
		return gs
	}
	off, on := replicas("memory"), replicas(redisURL)
	opts := func(gs []*gateway, n int) load.Options {
		rr := &rotate{base: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}}
		for _, g := range gs {
			rr.hosts = append(rr.hosts, hostPort(b, g.Base))
		}
		return load.Options{URL: gs[0].agentURL("px"), Style: load.Session, Concurrency: 64, Requests: n, Tool: "echo",
			Arguments: map[string]any{"text": "hi"}, Client: &http.Client{Transport: rr}}
	}
	runLoad(b, opts(off, 256))
	runLoad(b, opts(on, 256))
	if warmUpOnly(b) {
		return
	}
	sides := [][]*gateway{off, on}
	m := runABBA(func(i int) load.Result { return runLoad(b, opts(sides[i], calls(b))) }, func(i int) usage { return usage{cpu: cpuOf(sides[i])} })
	rates := m.rates // memory, redis: calls/s by round
	ratio := median(m.ratios())
	var adopted float64
	for _, g := range on {
		adopted += g.metrics(`pallasgw_downstream_session_adoptions_total{server="down"}`)[`pallasgw_downstream_session_adoptions_total{server="down"}`]
	}
	perCallCPU := func(i int) time.Duration { return m.cost[i].cpu / time.Duration(max(m.calls[i], 1)) }
	b.ReportMetric(ratio, "store/memory-c64-throughput")

	// 200 callers, cap 64, one replica.
	capped := startGateway(b, fmt.Sprintf(replicasBenchConfig, benchStateKey, "memory", d.url(), 64))
	wide := load.Options{URL: capped.agentURL("px"), Style: load.Session, Concurrency: 200, Requests: max(calls(b), 2000), Tool: "echo",
		Arguments: map[string]any{"text": "hi"}, Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}}
	wres, err := load.Run(b.Context(), wide)
	if err != nil {
		b.Fatal(err)
	}
	evicted := capped.metrics(`pallasgw_downstream_session_evictions_total{server="down"}`)[`pallasgw_downstream_session_evictions_total{server="down"}`]
	rss := idleRSS(capped)
	if wres.Errors > 0 {
		b.Errorf("200 callers against max_sessions 64: %d errors (first: %s)", wres.Errors, wres.FirstErr)
	}

	b.Logf("3 replicas round-robin, session-based, 64 callers, %d calls per path and round, %d rounds (medians):\n%s", calls(b), rounds(),
		table([]string{"figure", "sessions.store: memory", "sessions.store: redis", "ratio", "target"}, func(add func(...string)) {
			add("calls/s", fmtRate(median(rates[0])), fmtRate(median(rates[1])), fmt.Sprintf("%.3f", ratio),
				fmt.Sprintf("≥ %.2f ", targetStoreRatio)+verdict(ratio >= targetStoreRatio))
			add("CPU/call, 3 replicas", us(perCallCPU(0)), us(perCallCPU(1)), fmt.Sprintf("%.2f", float64(perCallCPU(1))/float64(max(perCallCPU(0), time.Nanosecond))), "")
			add("downstream sessions adopted", "", fmt.Sprintf("%.0f", adopted), "", "")
		}))
	b.Logf("200 distinct callers, one replica, max_sessions 64: %s; %.0f sessions evicted; RSS after %.1f MB", wres, evicted, rss/(1<<20))
	record(29, "session store (redis) through 3 replicas, session-based, 64 callers, against memory", fmt.Sprintf("≥ %.0f%% of memory", 100*targetStoreRatio),
		fmt.Sprintf("%s (memory %s)", fmtRate(median(rates[1])), fmtRate(median(rates[0]))), "", fmt.Sprintf("%.1f%% of memory", 100*ratio))
	record(29, "200 callers, max_sessions 64, one replica", "no error",
		fmt.Sprintf("%s, %d errors, RSS %.1f MB, %.0f evictions", fmtRate(wres.Rate()), wres.Errors, rss/(1<<20), evicted), "", "")
}

// targetStoreRatio: the store on keeps at least this share of the
// throughput of the same replicas without it (printed against, never
// asserted).
const targetStoreRatio = 0.90

// benchStateKey is the state_key the replicas share (32 bytes, base64).
const benchStateKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

const replicasBenchConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
sessions: {store: %q}
mcp:
  servers:
    down: {url: %q, timeout: 30s, max_sessions: %d}
agents:
  px: {kind: proxy, servers: [down]}
`

// rotate sends each request to the next of hosts (host:port).
type rotate struct {
	base  http.RoundTripper
	hosts []string
	n     atomic.Uint64
}

func (r *rotate) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = r.hosts[(r.n.Add(1)-1)%uint64(len(r.hosts))]
	req.Host = req.URL.Host
	return r.base.RoundTrip(req)
}

func hostPort(b *testing.B, base string) string {
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	return u.Host
}

func cpuOf(gs []*gateway) time.Duration {
	var t time.Duration
	for _, g := range gs {
		t += g.cpu()
	}
	return t
}
