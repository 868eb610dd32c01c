package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
	"github.com/pallasgw/pallasgw/test/load"
)

// gateway is one running pallasgw process, with the readers the
// benchmarks measure it by.
type gateway struct {
	*gwtest.Gateway
	b *testing.B
}

// startGateway writes cfg ({{PORT}} replaced by the main port) and runs
// `pallasgw serve` on it, logging at info to a file, until the benchmark
// ends, with env added to its environment.
func startGateway(b *testing.B, cfg string, env ...string) *gateway {
	b.Helper()
	if binary == "" {
		b.Fatal("no gateway binary (run with -bench)")
	}
	return &gateway{gwtest.Start(b, gwtest.Options{Binary: binary, Config: cfg, LogLevel: "info", LogFile: true, TailBytes: 4000, Env: env}), b}
}

// problems returns up to n of the gateway's warn and error log lines, for
// reports of failed calls.
func (g *gateway) problems(n int) []string {
	var out []string
	for _, line := range strings.Split(g.Logs(), "\n") {
		if len(out) < n && (strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`)) {
			out = append(out, line)
		}
	}
	return out
}

func (g *gateway) agentURL(name string) string { return g.Base + "/agents/" + name + "/mcp" }

// cpu is the gateway process's user+system CPU time so far.
func (g *gateway) cpu() time.Duration {
	g.b.Helper()
	d, err := procCPU(strconv.Itoa(g.Pid()))
	if err != nil {
		g.b.Fatalf("reading the gateway's CPU time: %v", err)
	}
	return d
}

// selfCPU is the benchmark process's CPU time so far (the load generator,
// the downstream and the fake LLM live here).
func selfCPU(b *testing.B) time.Duration {
	d, err := procCPU("self")
	if err != nil {
		b.Fatalf("reading our CPU time: %v", err)
	}
	return d
}

// procCPU reads user+system time from /proc/<pid>/stat (clock ticks, 10 ms
// on most kernels).
func procCPU(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ; 100 on every Linux this runs on.
const clockTicks = 100

// metrics reads the named unlabelled series (or exact "name{labels}"
// strings) from /metrics.
func (g *gateway) metrics(names ...string) map[string]float64 {
	g.b.Helper()
	all, err := g.Metrics()
	if err != nil {
		g.b.Fatal(err)
	}
	out := map[string]float64{}
	for _, n := range names {
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return out
}

// gauge reads one series, failing the benchmark when it is missing.
func (g *gateway) gauge(name string) float64 {
	g.b.Helper()
	v, ok := g.metrics(name)[name]
	if !ok {
		g.b.Fatalf("/metrics has no %s", name)
	}
	return v
}

// usage is the gateway's resource use over an interval.
type usage struct {
	cpu            time.Duration
	mallocs, bytes float64
}

const (
	mMallocs = "go_memstats_mallocs_total"
	mBytes   = "go_memstats_alloc_bytes_total"
)

func (g *gateway) usage() usage {
	m := g.metrics(mMallocs, mBytes)
	return usage{cpu: g.cpu(), mallocs: m[mMallocs], bytes: m[mBytes]}
}

// perCall is CPU, allocations and allocated bytes per call between two
// readings (the scrapes themselves are included: a few hundred allocations).
func perCall(before, after usage, calls int) (cpu time.Duration, allocs, bytes float64) {
	if calls == 0 {
		return 0, 0, 0
	}
	n := float64(calls)
	return (after.cpu - before.cpu) / time.Duration(calls), (after.mallocs - before.mallocs) / n, (after.bytes - before.bytes) / n
}

// forceGC makes the gateway collect garbage (the heap profile endpoint
// does with gc=1), so heap figures are live memory.
func (g *gateway) forceGC() {
	g.b.Helper()
	resp, err := http.Get(g.Base + "/debug/pprof/heap?gc=1")
	if err != nil {
		g.b.Fatalf("forcing a GC: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// heapProfile saves the live heap (after a GC) when PALLASGW_BENCH_PROFILE
// names a directory (compare with: go tool pprof -sample_index=inuse_space
// -base footprint.heap.before.pb.gz footprint.heap.after.pb.gz).
func (g *gateway) heapProfile(file string) { g.saveProfile("/debug/pprof/heap?gc=1", file) }

// saveProfile fetches a pprof path into file when PALLASGW_BENCH_PROFILE
// names a directory.
func (g *gateway) saveProfile(path, file string) {
	dir := profileDir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		g.b.Fatal(err)
	}
	p := &profiler{g: g, dir: dir}
	p.fetch(path, file)
}

// profiler fetches pprof endpoints of the gateway into dir.
type profiler struct {
	g   *gateway
	dir string
}

// profileDir is PALLASGW_BENCH_PROFILE ("" when profiling is off).
func profileDir() string { return os.Getenv("PALLASGW_BENCH_PROFILE") }

// profileSeconds is PALLASGW_BENCH_PROFILE_SECONDS (default 10).
func profileSeconds() int {
	if n, err := strconv.Atoi(os.Getenv("PALLASGW_BENCH_PROFILE_SECONDS")); err == nil && n > 0 {
		return n
	}
	return 10
}

// profileLoad, when PALLASGW_BENCH_PROFILE names a directory, runs o for
// PALLASGW_BENCH_PROFILE_SECONDS while taking the gateway's CPU profile,
// with allocation profiles before and after:
//
//	go tool pprof -top NAME.cpu.pb.gz
//	go tool pprof -sample_index=alloc_space -base NAME.allocs.base.pb.gz NAME.allocs.pb.gz
func (g *gateway) profileLoad(name string, o load.Options) {
	dir := profileDir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		g.b.Fatal(err)
	}
	p := &profiler{g: g, dir: dir}
	secs := profileSeconds()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(2*secs+60)*time.Second)
	defer cancel()
	cpuProfile := func(o load.Options, file string) load.Result {
		cpu := make(chan error, 1)
		go func() {
			cpu <- p.fetchCtx(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), file)
		}()
		o.Requests, o.Duration = 0, time.Duration(secs)*time.Second+500*time.Millisecond
		res := runLoad(g.b, o)
		if err := <-cpu; err != nil {
			g.b.Logf("CPU profile: %v", err)
		}
		return res
	}
	p.fetch("/debug/pprof/allocs", name+".allocs.base.pb.gz")
	res := cpuProfile(o, name+".cpu.pb.gz")
	p.fetch("/debug/pprof/allocs", name+".allocs.pb.gz")
	g.b.Logf("profiled %s over %ds (%s): %s/%s.{cpu,allocs.base,allocs}.pb.gz", name, secs, res, dir, name)

	// The same with one caller: what the CPU of the unloaded latency is.
	one := o
	one.Concurrency = 1
	res = cpuProfile(one, name+".c1.cpu.pb.gz")
	g.b.Logf("profiled %s with 1 caller over %ds (%s): %s/%s.c1.cpu.pb.gz", name, secs, res, dir, name)

	// One caller for 2 s under the execution tracer: where the unloaded
	// latency goes (go tool trace NAME.c1.trace).
	trace := make(chan error, 1)
	go func() { trace <- p.fetchCtx(ctx, "/debug/pprof/trace?seconds=2", name+".c1.trace") }()
	o.Concurrency, o.Duration = 1, 2500*time.Millisecond
	res = runLoad(g.b, o)
	if err := <-trace; err != nil {
		g.b.Logf("trace: %v", err)
	}
	g.b.Logf("traced %s with 1 caller (%s): %s/%s.c1.trace", name, res, dir, name)
}

func (p *profiler) fetch(path, file string) {
	if err := p.fetchCtx(context.Background(), path, file); err != nil {
		p.g.b.Logf("profile %s: %v", path, err)
	}
}

func (p *profiler) fetchCtx(ctx context.Context, path, file string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.g.Base+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	f, err := os.Create(filepath.Join(p.dir, file))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
