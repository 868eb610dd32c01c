// Package soak runs the real pallasgw binary for a long while under mixed
// load, with reloads and faults, and checks that its goroutines, heap and
// file descriptors come back to where they started. It runs only when
// PALLASGW_SOAK is set to a duration (`make soak` sets 10m):
//
//	PALLASGW_SOAK=60s go test -race -count=1 -timeout 20m -run TestSoak -v ./test/soak/
//
// Everything listens on 127.0.0.1. The load is test/load's raw-HTTP engine.
package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

const (
	sampleEvery = 10 * time.Second
	reloadEvery = 3 * time.Second
	crashEvery  = 2 * time.Second  // the stdio server is told to exit
	hangLimit   = 60 * time.Second // a call unanswered this long is hung
	// After the load stops, the gauges must come back within these margins
	// of their baseline, once idle keep-alive connections have timed out
	// (90 s) and the runtime has collected (at least every 2 min).
	settleWithin     = 4 * time.Minute
	goroutineMargin  = 15
	fdMargin         = 10
	heapMarginFactor = 2.0
	heapMarginBytes  = 16 << 20
)

// soakConfig: %[1]s the generation, %[2]s the model base URL, %[3]s the
// flapping server's address, %[4]s extra agents, %[5]s the stdio server's
// command (crashed on purpose now and then).
const soakConfig = `
name: soak
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 50ms, poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %[2]q, api_key: "sk-soak", timeout: 30s}
mcp:
  servers:
    flap: {transport: http, url: "http://%[3]s/mcp", timeout: 5s}
    local: {transport: stdio, command: %[5]q, timeout: 10s}
agents:
  chat: {servers: [flap], timeout: 30s, max_iterations: 4, description: "generation %[1]s"}
  px: {kind: proxy, servers: [flap]}
  lpx: {kind: proxy, servers: [local]}
%[4]s`

func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("PALLASGW_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set PALLASGW_SOAK to a duration (e.g. 60s) to run the soak test; `make soak` runs 10m")
	}
	bin := buildGateway(t)
	stdio := buildStdioServer(t)
	llm := fakellm.New(t)
	ports := freePorts(t, 3)
	flap := newFlapper(fmt.Sprintf("127.0.0.1:%d", ports[1]))
	if err := flap.up(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(flap.down)
	configs := [2]string{
		fmt.Sprintf(soakConfig, "A", llm.OpenAIBaseURL(), flap.addr, "", stdio),
		fmt.Sprintf(soakConfig, "B", llm.OpenAIBaseURL(), flap.addr,
			fmt.Sprintf("  extra: {model: passthrough, port: %d}\n", ports[2]), stdio),
	}
	g := startGateway(t, bin, ports[0], configs[0])

	warmUp(t, g.Base)
	base, err := readSample(g.Base)
	if err != nil {
		t.Fatal(err)
	}
	base.note = "baseline"
	rows := []sample{base}
	t.Logf("soak for %s; baseline: %.0f goroutines, %.1f MiB heap in use, %.0f open fds", d, base.goroutines, base.heapInuse/(1<<20), base.openFDs)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var bg sync.WaitGroup
	var faults []string
	var faultsMu sync.Mutex
	report := func(err error) {
		faultsMu.Lock()
		defer faultsMu.Unlock()
		faults = append(faults, err.Error())
	}
	sc := &scripter{llm: llm}
	bg.Go(func() { sc.run(ctx) })
	// Standing faults, met by every call of their own load run (the
	// scripted 500s above mostly end in a successful retry, and spread over
	// whichever calls come).
	for _, f := range modelFaults {
		llm.When(f.message, f.step)
	}
	bg.Go(func() { flap.run(ctx, 3*time.Second, 1500*time.Millisecond, report) })
	var reloads atomic.Int64
	bg.Go(func() { reloadLoop(ctx, g, configs, &reloads, report) })
	crashes := &crasher{url: g.Base + "/agents/lpx/mcp"}
	bg.Go(func() { crashes.run(ctx, crashEvery) })

	watch := &hangWatch{base: &http.Transport{MaxIdleConnsPerHost: 64}, limit: hangLimit}
	client := &http.Client{Transport: watch}
	results, calls := runLoad(t, g.Base, d, client)

	// Sample every 10 s while the load runs.
	start := time.Now()
	tick := time.NewTicker(sampleEvery)
	for running := true; running; {
		select {
		case <-results.done:
			running = false
		case <-tick.C:
			s, err := readSample(g.Base)
			if err != nil {
				report(fmt.Errorf("sampling: %w", err))
				continue
			}
			s.at, s.calls, s.reloads = time.Since(start), calls.Load(), reloads.Load()
			rows = append(rows, s)
			t.Logf("t=%s goroutines=%.0f heap_inuse=%.1fMiB open_fds=%.0f calls=%d reloads=%d",
				s.at.Round(time.Second), s.goroutines, s.heapInuse/(1<<20), s.openFDs, s.calls, s.reloads)
		}
	}
	tick.Stop()
	stop()
	bg.Wait()
	loadEnd := time.Since(start)
	// The last reload may have left config B serving: go back to A, which
	// the baseline was taken on.
	if err := reloadTo(g, configs[0]); err != nil {
		t.Errorf("final reload: %v", err)
	}
	client.CloseIdleConnections()

	for _, r := range results.list {
		t.Logf("%-36s %s", r.name, r.res)
		if r.res.Errors > 0 {
			t.Logf("%-36s first error: %s", "", r.res.FirstErr)
		}
		if r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		}
		if r.res.Calls == 0 {
			t.Errorf("%s made no calls", r.name)
		}
		if r.fault != nil && (r.res.Errors != r.res.Calls || !strings.Contains(r.res.FirstErr, r.fault.want)) {
			t.Errorf("%s: %d of %d calls failed (want all, with %q); first error: %s", r.name, r.res.Errors, r.res.Calls, r.fault.want, r.res.FirstErr)
		}
	}
	for _, outcome := range []string{"error", "canceled"} {
		series := fmt.Sprintf(`pallasgw_llm_requests_total{agent="chat",model="fake-model",outcome=%q,provider="openai"}`, outcome)
		if v := g.metricValue(t, series); v == 0 {
			t.Errorf("%s is 0: the model faults were not counted", series)
		}
	}
	t.Logf("model: %d tool-call answers and %d HTTP 500s scripted; downstream flapped %d times; %d reloads; stdio server crashed %d times",
		sc.toolCalls.Load(), sc.fails.Load(), flap.flaps.Load(), reloads.Load(), crashes.n)
	if crashes.n == 0 || crashes.bad != "" {
		t.Errorf("stdio crashes: %d made; an answer that was not the crash's error: %s", crashes.n, crashes.bad)
	}
	// The stdio server is started again on the next use.
	if res, err := load.Run(context.Background(), load.Options{URL: g.Base + "/agents/lpx/mcp", Style: load.Sessionless, Concurrency: 1,
		Requests: 1, Tool: "echo", Arguments: map[string]any{"text": "after"}}); err != nil || res.Errors > 0 {
		t.Errorf("the stdio server after the crashes: %v %s", err, res.FirstErr)
	}

	// Back to baseline: poll until every gauge is within its margin.
	end, settled := settle(g.Base, base, settleWithin)
	end.at, end.calls, end.reloads = loadEnd+end.at, calls.Load(), reloads.Load()
	end.note = "after the load, settled"
	if !settled {
		end.note = "after the load, NOT settled"
	}
	rows = append(rows, end)
	t.Logf("resource table (baseline, every %s under load, after):\n%s", sampleEvery, table(rows))

	if !settled {
		dumpGoroutines(t, g.Base)
		t.Errorf("gauges did not return to baseline within %s: %.0f goroutines (baseline %.0f), %.1f MiB heap (%.1f), %.0f fds (%.0f)",
			settleWithin, end.goroutines, base.goroutines, end.heapInuse/(1<<20), base.heapInuse/(1<<20), end.openFDs, base.openFDs)
	}
	if n := watch.hung.Load(); n > 0 {
		t.Errorf("%d calls were unanswered after %s (hung)", n, hangLimit)
	}
	for _, f := range faults {
		t.Errorf("soak harness: %s", f)
	}
	if n := reloads.Load(); n < 2 {
		t.Errorf("only %d reloads happened", n)
	}
	if v := g.metricValue(t, `pallasgw_config_reloads_total{result="failure"}`); v != 0 {
		t.Errorf("%v reloads failed", v)
	}
	g.checkAlive(t)
}

// loadRun is one of the concurrent load runs and its result.
type loadRun struct {
	name  string
	fault *modelFault // every call of the run meets it
	res   load.Result
	err   error
}

// modelFault is a fault of the fake model that every send_message with
// message meets; want is in the error each of those calls gets.
type modelFault struct {
	name, message string
	step          fakellm.Step
	timeout       time.Duration // the caller gives up after this long
	want          string
}

var modelFaults = []*modelFault{
	{name: "model fails every attempt", message: "soak-fail", step: fakellm.Status(500),
		want: "LLM provider failed"},
	{name: "model sends a malformed chunk", message: "soak-garble", step: fakellm.Text("half an answer").Quirks(fakellm.QuirkMalformedChunk),
		want: "malformed stream chunk"},
	{name: "model hangs, caller leaves", message: "soak-hang", step: fakellm.Hang(), timeout: 300 * time.Millisecond,
		want: "Client.Timeout exceeded"},
}

type loadResults struct {
	done chan struct{}
	list []*loadRun
}

// runLoad starts the mixed load for d in the background: send_message to
// the llm agent in both protocol styles (with progress in one), get_health,
// and tools/call through the proxy agent. calls counts answered calls as
// they happen.
func runLoad(t *testing.T, base string, d time.Duration, client *http.Client) (*loadResults, *atomic.Int64) {
	t.Helper()
	chat, px := base+"/agents/chat/mcp", base+"/agents/px/mcp"
	opts := map[string]load.Options{
		"send_message (session)":     {URL: chat, Style: load.Session, Concurrency: 4, Tool: "send_message", Arguments: map[string]any{"message": "hello"}, Progress: true},
		"send_message (sessionless)": {URL: chat, Style: load.Sessionless, Concurrency: 4, Tool: "send_message", Arguments: map[string]any{"message": "hi"}},
		"get_health":                 {URL: chat, Style: load.Sessionless, Concurrency: 2, Tool: "get_health", Arguments: map[string]any{}},
		"proxy tools/call":           {URL: px, Style: load.Sessionless, Concurrency: 4, Tool: "echo", Arguments: map[string]any{"text": "through"}},
		"stdio proxy tools/call":     {URL: base + "/agents/lpx/mcp", Style: load.Sessionless, Concurrency: 2, Tool: "echo", Arguments: map[string]any{"text": "local"}},
	}
	out := &loadResults{done: make(chan struct{})}
	calls := &atomic.Int64{}
	counting := &http.Client{Transport: countingRT{client.Transport, calls}}
	var wg sync.WaitGroup
	start := func(r *loadRun, o load.Options) {
		out.list = append(out.list, r)
		wg.Go(func() { r.res, r.err = load.Run(context.Background(), o) })
	}
	for name, o := range opts {
		o.Duration, o.Client = d, counting
		start(&loadRun{name: name}, o)
	}
	for _, f := range modelFaults {
		start(&loadRun{name: "send_message (" + f.name + ")", fault: f}, load.Options{URL: chat, Style: load.Sessionless, Concurrency: 1,
			Tool: "send_message", Arguments: map[string]any{"message": f.message}, Duration: d,
			Client: &http.Client{Transport: counting.Transport, Timeout: f.timeout}})
	}
	go func() {
		wg.Wait()
		close(out.done)
	}()
	return out, calls
}

// countingRT counts answered requests.
type countingRT struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		c.n.Add(1)
	}
	return resp, err
}

// warmUp makes one call of each kind, so that the baseline includes the
// pooled downstream session and the connections every call path opens.
func warmUp(t *testing.T, base string) {
	t.Helper()
	for _, o := range []load.Options{
		{URL: base + "/agents/chat/mcp", Style: load.Sessionless, Tool: "send_message", Arguments: map[string]any{"message": "warm"}},
		{URL: base + "/agents/chat/mcp", Style: load.Sessionless, Tool: "get_health", Arguments: map[string]any{}},
		{URL: base + "/agents/px/mcp", Style: load.Sessionless, Tool: "echo", Arguments: map[string]any{"text": "warm"}},
		{URL: base + "/agents/lpx/mcp", Style: load.Sessionless, Tool: "echo", Arguments: map[string]any{"text": "warm"}},
	} {
		o.Concurrency, o.Requests = 1, 3
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		o.Client = hc
		res, err := load.Run(context.Background(), o)
		if err != nil || res.Errors > 0 {
			t.Fatalf("warm-up %s on %s: %v %s %s", o.Tool, o.URL, err, res, res.FirstErr)
		}
	}
}

// reloadLoop alternates the two configs every reloadEvery until ctx ends.
func reloadLoop(ctx context.Context, g *gateway, configs [2]string, n *atomic.Int64, report func(error)) {
	tick := time.NewTicker(reloadEvery)
	defer tick.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := reloadTo(g, configs[i%2]); err != nil {
			report(err)
			continue
		}
		n.Add(1)
	}
}

// reloadTo renames cfg over the config file (as editors do) and reloads
// through the admin endpoint; the file watcher may have done it already.
func reloadTo(g *gateway, cfg string) error {
	if err := g.RenameConfig(cfg); err != nil {
		return err
	}
	resp, err := http.Post(g.Base+"/-/reload", "application/json", nil)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK || !out.OK {
		return fmt.Errorf("reload: HTTP %d: %s", resp.StatusCode, out.Error)
	}
	return nil
}

// settle polls until goroutines, heap and fds are back within their margins
// of base, or within has passed; it returns the last sample (at: time
// spent settling).
func settle(url string, base sample, within time.Duration) (sample, bool) {
	start := time.Now()
	var last sample
	for {
		s, err := readSample(url)
		if err == nil {
			last = s
			last.at = time.Since(start)
			if s.goroutines <= base.goroutines+goroutineMargin && s.openFDs <= base.openFDs+fdMargin &&
				s.heapInuse <= base.heapInuse*heapMarginFactor+heapMarginBytes {
				return last, true
			}
		}
		if time.Since(start) > within {
			return last, false
		}
		time.Sleep(500 * time.Millisecond)
	}
}
