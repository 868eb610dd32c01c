package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/load"
)

// Reload: 100 reloads (edit the file, POST /-/reload) while two
// steady loads run — send_message on an llm agent (sessionless) and
// tools/call through a proxy agent (session style). Every reload swaps the
// agent probe_<i> for probe_<i+1>; reload-to-serving is the time from the
// POST to the first successful call of the new agent. The direct path is
// the same steady load without reloads, measured first in the same run.
// calls(b) reloads, at most 100. The watcher's debounce is set to 10 s so that
// the POST, not the file watcher, applies each edit.
func BenchmarkReload(b *testing.B) {
	d := newDownstream(b)
	g := startGateway(b, reloadConfig(d.url(), 0))
	loads := func(dur time.Duration) []load.Options {
		return []load.Options{
			{URL: g.agentURL("steady"), Style: load.Sessionless, Concurrency: reloadCallers, Duration: dur,
				Tool: "send_message", Arguments: map[string]any{"message": "hi"}},
			{URL: g.agentURL("px"), Style: load.Session, Concurrency: reloadCallers, Duration: dur,
				Tool: "echo", Arguments: map[string]any{"text": "hi"}},
		}
	}
	runConcurrently(b, context.Background(), loads(time.Second))
	if warmUpOnly(b) {
		return
	}
	baseline := runConcurrently(b, context.Background(), loads(3*time.Second))

	okBefore := g.gauge(`pallasgw_config_reloads_total{result="success"}`)
	ctx, stopLoad := context.WithCancel(context.Background())
	loaded := make(chan []load.Result, 1)
	go func() { loaded <- runConcurrently(b, ctx, loads(maxRun)) }()
	time.Sleep(500 * time.Millisecond) // the load is steady before the first reload
	post, toServe := reloadLoop(b, g, d.url(), min(calls(b), 100))
	stopLoad()
	during := <-loaded
	applied := int(g.gauge(`pallasgw_config_reloads_total{result="success"}`) - okBefore)
	reportReload(b, baseline, during, post, toServe, applied)
	if during[0].Errors+during[1].Errors > 0 {
		b.Errorf("calls failed during the reloads; the gateway's warnings and errors:\n%s", strings.Join(g.problems(20), "\n"))
	}
}

const reloadCallers = 8 // per steady load

// reloadLoop does n reloads, each adding probe_<i> (and dropping the one
// before), and returns how long each POST took and each reload-to-serving
// time, in ms. Failures are benchmark errors.
func reloadLoop(b *testing.B, g *gateway, downstream string, n int) (post, toServe []float64) {
	probe := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	deadline := time.Now().Add(maxRun)
	for i := 1; i <= n && time.Now().Before(deadline); i++ {
		g.renameConfig(reloadConfig(downstream, i))
		t0 := time.Now()
		status, body := g.postReload()
		post = append(post, ms(time.Since(t0)))
		if status != http.StatusOK {
			b.Errorf("reload %d: HTTP %d: %s", i, status, body)
			continue
		}
		served := false
		for try := 0; try < 500 && !served; try++ { // at most ~5 s
			res, _ := load.Run(context.Background(), load.Options{URL: g.agentURL(fmt.Sprintf("probe_%d", i)), Style: load.Sessionless,
				Concurrency: 1, Requests: 1, Tool: "send_message", Arguments: map[string]any{"message": "ping"}, Client: probe})
			if served = res.Errors == 0 && res.Calls == 1; !served {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !served {
			b.Errorf("reload %d: probe_%d never answered", i, i)
			continue
		}
		toServe = append(toServe, ms(time.Since(t0)))
		time.Sleep(20 * time.Millisecond) // let the load run on the new config
	}
	return post, toServe
}

func reportReload(b *testing.B, baseline, during []load.Result, post, toServe []float64, applied int) {
	var failed, total int
	for _, r := range during {
		failed += r.Errors
		total += r.Calls
		if r.FirstErr != "" {
			b.Logf("first failure: %s", r.FirstErr)
		}
	}
	p95 := percentile(toServe, 95)
	noPerOpFigures(b)
	b.ReportMetric(float64(failed), "failed-requests")
	b.ReportMetric(p95, "reload-to-serving-p95-ms")
	b.ReportMetric(percentile(toServe, 50), "reload-to-serving-p50-ms")
	p99 := func(r load.Result) float64 { return ms(r.Percentile(99)) }
	b.Logf("%d reloads (%d applied per pallasgw_config_reloads_total) during steady load (2 × %d callers):\n%s", len(post), applied, reloadCallers,
		table([]string{"figure", "without reloads (direct)", "during reloads", "ratio", "target"}, func(add func(...string)) {
			for i, name := range []string{"llm agent, sessionless", "proxy agent, session"} {
				add(name+": calls", fmt.Sprint(baseline[i].Calls), fmt.Sprint(during[i].Calls), "", "")
				add(name+": failed", fmt.Sprint(baseline[i].Errors), fmt.Sprint(during[i].Errors), "", "0 "+verdict(during[i].Errors == 0))
				add(name+": p50", fmtMS(ms(baseline[i].Percentile(50))), fmtMS(ms(during[i].Percentile(50))),
					fmt.Sprintf("%.2f", ms(during[i].Percentile(50))/ms(baseline[i].Percentile(50))), "")
				add(name+": p99", fmtMS(p99(baseline[i])), fmtMS(p99(during[i])), fmt.Sprintf("%.2f", p99(during[i])/p99(baseline[i])), "")
			}
			add("POST /-/reload p50 / p95", "", fmtMS(percentile(post, 50))+" / "+fmtMS(percentile(post, 95)), "", "")
			add("reload-to-serving p50", "", fmtMS(percentile(toServe, 50)), "", "")
			add("reload-to-serving p95", "", fmtMS(p95), "", "< 250 ms "+verdict(p95 < 250))
			add("reload-to-serving max", "", fmtMS(percentile(toServe, 100)), "", "")
		}))
	record(40, fmt.Sprintf("reload: failed requests during %d reloads", len(post)), "0", fmt.Sprintf("%d of %d", failed, total), "", "")
	record(41, "reload: reload-to-serving p95", "< 250 ms", fmtMS(p95), "", fmt.Sprintf("%.2f× target", p95/250))
	worst := max(p99(during[0])/p99(baseline[0]), p99(during[1])/p99(baseline[1]))
	record(42, "reload: steady-load p99 during reloads (llm / proxy)", "", fmt.Sprintf("%s / %s", fmtMS(p99(during[0])), fmtMS(p99(during[1]))),
		fmt.Sprintf("%s / %s", fmtMS(p99(baseline[0])), fmtMS(p99(baseline[1]))), fmt.Sprintf("≤ %.2f×", worst))
}

// reloadConfig is the steady agents plus probe_<i> (none for i = 0).
func reloadConfig(downstream string, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0, debounce: 10s}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  steady: {model: passthrough}
  px: {kind: proxy, servers: [down]}
`, downstream)
	if i > 0 {
		fmt.Fprintf(&b, "  probe_%d: {model: passthrough}\n", i)
	}
	return b.String()
}

// renameConfig replaces the config the way editors do (write beside it,
// rename over it).
func (g *gateway) renameConfig(cfg string) {
	g.b.Helper()
	if err := g.RenameConfig(cfg); err != nil {
		g.b.Fatal(err)
	}
}

func (g *gateway) postReload() (int, string) {
	resp, err := http.Post(g.Base+"/-/reload", "application/json", nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var v any
	json.NewDecoder(resp.Body).Decode(&v)
	out, _ := json.Marshal(v)
	return resp.StatusCode, string(out)
}

// runConcurrently runs the loads at once and returns their results in order.
func runConcurrently(b *testing.B, ctx context.Context, opts []load.Options) []load.Result {
	out := make([]load.Result, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := load.Run(ctx, o)
			if err != nil {
				b.Errorf("load on %s: %v", o.URL, err)
			}
			out[i] = res
		}()
	}
	wg.Wait()
	return out
}

// percentile of xs (0 when empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
