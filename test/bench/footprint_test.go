package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

// Footprint: the idle RSS of a gateway with 100 llm agents (each
// with a downstream server), against a gateway with one agent started in
// the same run; then calls(b) (at most 1,000) concurrent streaming send_message
// calls on a slow fake model, with goroutines, live heap and RSS before
// (after a warm-up), during (all calls in flight) and after (calls done,
// the client's connections closed, a forced GC).
func BenchmarkFootprint(b *testing.B) {
	if warmUpOnly(b) {
		return
	}
	const delay = 5 * time.Second // every answer of the fake model takes this long
	llm := fakellm.NewAuto(b, fakellm.AutoOptions{Delay: delay, Answer: "slowly done"})
	d := newDownstream(b)
	one := startGateway(b, footprintConfig(llm.OpenAIBaseURL(), d.url(), 1))
	many := startGateway(b, footprintConfig(llm.OpenAIBaseURL(), d.url(), 100))
	rssOne, rssMany := idleRSS(one), idleRSS(many)
	one.Stop()
	b.ReportMetric(rssMany/(1<<20), "idle-RSS-MB")

	streams := min(calls(b), 1000)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * streams, MaxConnsPerHost: 2 * streams}}
	call := func(n int) load.Options {
		return load.Options{URL: many.agentURL("a000"), Style: load.Sessionless, Concurrency: n, Requests: n, Progress: true,
			Tool: "send_message", Arguments: map[string]any{"message": "take your time"}, Client: client}
	}
	// Warm-up: pools and lazily built state exist before the baseline; 128
	// concurrent calls fill the idle connection pools to their caps (64 to
	// an LLM host), which the 1,000 streams leave full too.
	listsBefore := d.lists.Load()
	runLoad(b, call(128))
	b.Logf("the downstream served %d tools/list requests during the 128 concurrent warm-up calls (cold tool cache)", d.lists.Load()-listsBefore)
	client.CloseIdleConnections()
	before := settle(many, 0, 10*time.Second)
	many.heapProfile("footprint.heap.before.pb.gz")
	many.saveProfile("/debug/pprof/goroutine?debug=1", "footprint.goroutines.before.txt")

	// Two rounds: the first shows the runtime keeping what it grew (goroutine
	// descriptors are never freed, only reused); the second shows whether
	// anything grows per round, which a leak would.
	var during footprint
	var res load.Result
	var afters []footprint
	for round := 0; round < 2; round++ {
		in, r := streamRound(b, many, call(streams), streams, delay)
		if round == 0 {
			during, res = in, r
		}
		client.CloseIdleConnections()
		afters = append(afters, settle(many, before.goroutines, 15*time.Second))
	}
	many.heapProfile("footprint.heap.after.pb.gz")
	many.saveProfile("/debug/pprof/goroutine?debug=1", "footprint.goroutines.after.txt")
	if profileDir() != "" {
		out, _ := exec.Command("ss", "-tnp").Output()
		os.WriteFile(filepath.Join(profileDir(), "footprint.sockets.after.txt"), out, 0o644)
		b.Logf("fake LLM %s, downstream %s", llm.URL(), d.url())
	}

	reportFootprint(b, footprintRun{rssOne: rssOne, rssMany: rssMany, streams: streams, res: res,
		before: before, during: during, after: afters[0], again: afters[1]})
	reloadMany(b, many, func(i int) string {
		return footprintConfig(llm.OpenAIBaseURL(), d.url(), 100) + fmt.Sprintf("  extra_%d: {servers: [srv]}\n", i)
	})
}

// footprintRun is what BenchmarkFootprint measured.
type footprintRun struct {
	rssOne, rssMany              float64
	streams                      int
	res                          load.Result // the first round's calls
	before, during, after, again footprint
}

func reportFootprint(b *testing.B, r footprintRun) {
	rssOne, rssMany, streams, res := r.rssOne, r.rssMany, r.streams, r.res
	before, during, after, again := r.before, r.during, r.after, r.again
	noPerOpFigures(b)
	b.ReportMetric(again.goroutines-before.goroutines, "goroutine-growth")
	b.ReportMetric((again.heap-after.heap)/(1<<20), "heap-growth-2nd-round-MB")
	b.Logf("footprint: idle RSS %s with 100 agents, %s with 1 agent; %d concurrent streaming calls (%d ok, %d failed, p50 %s):\n%s",
		fmtMB(rssMany), fmtMB(rssOne), streams, res.Calls-res.Errors, res.Errors, res.Percentile(50).Round(time.Millisecond),
		table([]string{"figure", "before", "during", "after", "after 2nd round", "after/before", "2nd/1st", "target"}, func(add func(...string)) {
			add("goroutines", fmt.Sprint(before.goroutines), fmt.Sprint(during.goroutines), fmt.Sprint(after.goroutines), fmt.Sprint(again.goroutines),
				fmt.Sprintf("%.2f", after.goroutines/before.goroutines), fmt.Sprintf("%.2f", again.goroutines/after.goroutines),
				"no growth "+verdict(again.goroutines <= before.goroutines+goroutineSlack))
			add("live heap (after GC)", fmtMB(before.heap), fmtMB(during.heap)+" (no GC)", fmtMB(after.heap), fmtMB(again.heap),
				fmt.Sprintf("%.2f", after.heap/before.heap), fmt.Sprintf("%.2f", again.heap/after.heap),
				"no growth per round "+verdict(again.heap <= after.heap*1.05+(512<<10)))
			add("RSS", fmtMB(before.rss), fmtMB(during.rss), fmtMB(after.rss), fmtMB(again.rss),
				fmt.Sprintf("%.2f", after.rss/before.rss), fmt.Sprintf("%.2f", again.rss/after.rss), "")
		}))
	record(50, "footprint: idle RSS, 100 agents", "< 60 MB", fmtMB(rssMany), fmtMB(rssOne)+" (1 agent)", fmt.Sprintf("%.2f× target", rssMany/(60<<20)))
	record(51, fmt.Sprintf("footprint: goroutines before/during/after/after 2nd round of %d streams", streams), "no growth",
		fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", before.goroutines, during.goroutines, after.goroutines, again.goroutines), "",
		fmt.Sprintf("%.2f× after/before", again.goroutines/before.goroutines))
	record(52, fmt.Sprintf("footprint: live heap before/during/after/after 2nd round of %d streams", streams), "no growth",
		fmt.Sprintf("%s / %s / %s / %s", fmtMB(before.heap), fmtMB(during.heap), fmtMB(after.heap), fmtMB(again.heap)), "",
		fmt.Sprintf("%.2f× 2nd/1st round", again.heap/after.heap))
}

// reloadMany times ten reloads of the 100-agent gateway (the reload
// benchmark has three agents); cfg(i) is the i-th edit.
func reloadMany(b *testing.B, g *gateway, cfg func(i int) string) {
	var took []float64
	for i := 1; i <= 10; i++ {
		g.renameConfig(cfg(i))
		t0 := time.Now()
		if status, body := g.postReload(); status != http.StatusOK {
			b.Errorf("reload %d of the 100-agent config: HTTP %d: %s", i, status, body)
			continue
		}
		took = append(took, ms(time.Since(t0)))
	}
	b.Logf("POST /-/reload of the 100-agent config: p50 %s, max %s (10 reloads)", fmtMS(percentile(took, 50)), fmtMS(percentile(took, 100)))
	record(53, "footprint: POST /-/reload of the 100-agent config, p50 / max of 10", "< 250 ms (reload-to-serving)",
		fmtMS(percentile(took, 50))+" / "+fmtMS(percentile(took, 100)), "", fmt.Sprintf("%.2f× target", percentile(took, 100)/250))
}

// streamRound runs n concurrent streaming calls and reads the footprint
// once all of them are in flight.
func streamRound(b *testing.B, g *gateway, o load.Options, n int, delay time.Duration) (footprint, load.Result) {
	done := make(chan load.Result, 1)
	start := time.Now()
	go func() { done <- runLoad(b, o) }()
	inflight := `pallasgw_inflight_requests{agent="a000"}`
	var during footprint
	for time.Since(start) < delay-500*time.Millisecond {
		if v, ok := g.metrics(inflight)[inflight]; ok && int(v) >= n {
			during = g.footprint()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if during.goroutines == 0 {
		b.Errorf("the %d streams were never in flight at once within the model's %s delay", n, delay)
		during = g.footprint()
	}
	return during, <-done
}

// goroutineSlack is what "back to baseline" allows: timers and probes of
// the health loop come and go.
const goroutineSlack = 5

func footprintConfig(llmURL, downstream string, agents int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-bench", timeout: 60s}
mcp:
  servers:
    srv: {url: %q, timeout: 30s}
agents:
`, llmURL, downstream)
	for i := 0; i < agents; i++ {
		fmt.Fprintf(&b, "  a%03d: {description: \"agent %d of the footprint benchmark\", servers: [srv]}\n", i, i)
	}
	return b.String()
}

// footprint is a reading of the gateway's size.
type footprint struct{ goroutines, heap, rss float64 }

func (g *gateway) footprint() footprint {
	m := g.metrics("go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes")
	return footprint{m["go_goroutines"], m["go_memstats_heap_alloc_bytes"], m["process_resident_memory_bytes"]}
}

// idleRSS waits for the gateway to go quiet (preflight and first health
// probes done: the resident set stops moving for a second, at most 10 s),
// then reads its resident set.
func idleRSS(g *gateway) float64 {
	const name = "process_resident_memory_bytes"
	last, stable := g.gauge(name), 0
	for deadline := time.Now().Add(10 * time.Second); stable < 4 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		v := g.gauge(name)
		if v >= last*0.99 && v <= last*1.01 {
			stable++
		} else {
			stable = 0
		}
		last = v
	}
	return last
}

// settle waits until the goroutine count is at most target (0: until it
// stops falling), for up to timeout, then forces a GC and reads the
// footprint.
func settle(g *gateway, target float64, timeout time.Duration) footprint {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	last := -1.0
	for ctx.Err() == nil {
		n := g.gauge("go_goroutines")
		if (target > 0 && n <= target+goroutineSlack) || (target == 0 && n == last) {
			break
		}
		last = n
		time.Sleep(250 * time.Millisecond)
	}
	g.forceGC()
	g.forceGC() // the second cycle empties sync.Pools' victim caches
	return g.footprint()
}
