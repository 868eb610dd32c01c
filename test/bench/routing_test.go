package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
	"github.com/pallasgw/pallasgw/test/load"
)

// Routing: tools/call through a proxy agent against straight to the
// downstream, at 64 concurrent callers; the same at 1 caller shows the
// unloaded added latency. Direct and gateway runs alternate (ABBA) for
// PALLASGW_BENCH_ROUNDS rounds; each figure is the median over rounds, and
// the added latencies are medians of the per-round differences. A third
// path, a bare reverse proxy (net/http/httputil, no MCP, no policy, in a
// process of its own) in front of the same downstream, shows for scale what
// any HTTP hop costs on the same machine: the floor under the gateway's
// figures. nginx, when installed, is the other floor, and its CPU per call
// (master and workers, read as the gateway's is) is the yardstick of the
// gateway's.
//
// A second gateway, the same proxy agent in auth.mode jwt against an
// identity provider in this process (discovery, JWKS, RS256), runs in the
// same rounds as the gateway path, every call carrying a valid bearer token
// for the agent's canonical URL: its throughput and added latency are
// printed against the gateway without auth of the same run.
//
// A third gateway, the same proxy agent with tracing on (sampling 1.0,
// every span exported over OTLP/HTTP to a sink in a process of its own
// that accepts and discards), runs in the same rounds too: its throughput
// at 64 callers is printed against the gateway with tracing off, and the
// CPU per call of every process (gateway, sink, this one) against off's.
func BenchmarkRoutingSessionless(b *testing.B) { benchRouting(b, load.Sessionless, 1) }

func BenchmarkRoutingSession(b *testing.B) { benchRouting(b, load.Session, 2) }

// The routing targets (printed against, never asserted).
const (
	targetAddedP50   = 0.15 // ms over direct, at 1 caller
	targetCPUvNginx  = 3.0  // gateway CPU per call ≤ this × an nginx hop's
	targetJWTRatio   = 0.90 // JWT-on throughput at 64 callers ≥ this × no auth's
	targetTraceRatio = 0.90 // tracing-on throughput at 64 callers ≥ this × tracing off's
)

// targetThroughput is the share of the direct path's throughput the
// gateway is to reach at 64 callers, for each protocol style.
func targetThroughput(style load.Style) (ratio float64, text string) {
	if style == load.Session {
		return 0.50, "≥ 50% of direct session-based"
	}
	return 0.70, "≥ 70% of direct sessionless"
}

const routingConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
mcp:
  servers:
    down: {url: %q, timeout: 30s%s}
agents:
  px: {kind: proxy, servers: [down]}
`

// routingConfigFor is routingConfig for the downstream at url. With
// PALLASGW_BENCH_SESSION_SCOPE set (caller, call or shared), the
// downstream's session_scope is that: an A/B against a build from before
// session_scope (whose default was one session per header set, shared)
// runs this build with shared to compare the same work.
func routingConfigFor(url string) string {
	scope := ""
	if s := os.Getenv("PALLASGW_BENCH_SESSION_SCOPE"); s != "" {
		scope = ", session_scope: " + s
	}
	return fmt.Sprintf(routingConfig, url, scope)
}

// jwtAuth is added to routingConfig for the JWT-on gateway: the audience is
// the default, the agent's canonical URL.
const jwtAuth = `
auth:
  mode: jwt
  jwt: {issuer: %q, algorithms: [RS256]}
`

// tracingOn is added to routingConfig for the tracing-on gateway.
const tracingOn = `
tracing: {endpoint: %q, sampling: 1.0}
`

// otlpSink is an OTLP/HTTP collector that accepts every export and
// discards it unread (no protobuf decoding), in a process of its own (this
// test binary again, serveOTLPSink), so that its CPU is read apart from the
// load generator's and the downstream's, as the gateway's is.
type otlpSink struct {
	url string
	pid int
}

func newOTLPSink(b *testing.B) *otlpSink {
	b.Helper()
	url, pid := startChild(b, sinkEnv+"=1", "the OTLP sink")
	return &otlpSink{url: url, pid: pid}
}

// cpu is the sink process's user+system CPU time so far.
func (s *otlpSink) cpu(b *testing.B) time.Duration {
	d, err := procCPU(strconv.Itoa(s.pid))
	if err != nil {
		b.Fatalf("reading the OTLP sink's CPU time: %v", err)
	}
	return d
}

// exports is how many export requests the sink has accepted.
func (s *otlpSink) exports(b *testing.B) int64 {
	resp, err := http.Get(s.url + "/exports")
	if err != nil {
		b.Fatalf("reading the OTLP sink's count: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n, _ := strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
	return n
}

// sinkEnv makes this test binary serveOTLPSink.
const sinkEnv = "PALLASGW_BENCH_OTLP_SINK"

// serveOTLPSink is the OTLP sink's process: it serves on 127.0.0.1,
// prints its base URL, and runs until it is killed. GET /exports answers
// the count of exports accepted.
func serveOTLPSink() int {
	var exports atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /exports", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, exports.Load()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("http://%s\n", ln.Addr())
	fmt.Fprintln(os.Stderr, http.Serve(ln, mux))
	return 1
}

// routingRun is one round's figures for one path.
type routingRun struct{ p50, p99, rate float64 } // ms, ms, calls/s

// routingPaths are the rounds of each path at one concurrency.
type routingPaths struct{ direct, gw, jwt, trace, floor, nginx []routingRun }

// routingCost is CPU and allocations over every measured run.
type routingCost struct {
	gw                        usage         // the gateway process, on the gateway path
	gw1                       time.Duration // of which at 1 caller: what the added p50 is made of
	gw1Calls                  int
	benchDirect, benchGW      time.Duration // this process (load generator, downstream) on each path
	directCalls, gatewayCalls int
	nginx                     time.Duration // nginx's processes, on the nginx path
	nginxCalls                int
	jwt                       usage // the JWT-on gateway process, on its path
	jwtCalls                  int
	trace                     usage // the tracing-on gateway process, on its path
	traceCalls                int
	benchTrace                time.Duration // this process (load generator, downstream) on the tracing-on path
	sink                      time.Duration // the OTLP sink's process, on the tracing-on path
}

func benchRouting(b *testing.B, style load.Style, order int) {
	d := newDownstream(b)
	g := startGateway(b, routingConfigFor(d.url()))
	issuer := newIDP(b)
	gj := startGateway(b, routingConfigFor(d.url())+fmt.Sprintf(jwtAuth, issuer.URL))
	sink := newOTLPSink(b)
	gt := startGateway(b, routingConfigFor(d.url())+fmt.Sprintf(tracingOn, sink.url))
	floor := newForwarder(b, d.ts.URL)
	nginx := startNginx(b, d.ts.URL) // nil without nginx
	opts := func(url string, c, n int) load.Options {
		return load.Options{URL: url, Style: style, Concurrency: c, Requests: n, Tool: "echo", Arguments: map[string]any{"text": "hi"},
			Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * c, MaxConnsPerHost: 2 * c}}}
	}
	bearer := http.Header{"Authorization": {"Bearer " + issuer.token(b, gj.agentURL("px"))}}
	jwtOpts := func(c, n int) load.Options {
		o := opts(gj.agentURL("px"), c, n)
		o.Header = bearer
		return o
	}
	// Warm up both paths (connections, the proxy's tool registration, the
	// downstream session pool).
	runLoad(b, opts(d.url(), 64, 256))
	runLoad(b, opts(g.agentURL("px"), 64, 256))
	runLoad(b, jwtOpts(64, 256))
	runLoad(b, opts(gt.agentURL("px"), 64, 256))
	runLoad(b, opts(floor+"/mcp", 64, 256))
	if nginx != nil {
		runLoad(b, opts(nginx.url+"/mcp", 64, 256))
	}
	if warmUpOnly(b) {
		return
	}
	figures := map[int]*routingPaths{1: {}, 64: {}}
	var cost routingCost
	run := func(o load.Options) (routingRun, int, time.Duration) {
		t0 := selfCPU(b)
		res := runLoad(b, o)
		return routingRun{ms(res.Percentile(50)), ms(res.Percentile(99)), res.Rate()}, res.Calls, selfCPU(b) - t0
	}
	for r := 0; r < rounds(); r++ {
		for _, c := range []int{1, 64} {
			direct := func() {
				fig, calls, cpu := run(opts(d.url(), c, calls(b)))
				figures[c].direct = append(figures[c].direct, fig)
				cost.directCalls, cost.benchDirect = cost.directCalls+calls, cost.benchDirect+cpu
			}
			gw := func() {
				before := g.usage()
				fig, calls, cpu := run(opts(g.agentURL("px"), c, calls(b)))
				after := g.usage()
				figures[c].gw = append(figures[c].gw, fig)
				cost.gatewayCalls, cost.benchGW = cost.gatewayCalls+calls, cost.benchGW+cpu
				cost.gw.cpu += after.cpu - before.cpu
				cost.gw.mallocs += after.mallocs - before.mallocs
				cost.gw.bytes += after.bytes - before.bytes
				if c == 1 {
					cost.gw1, cost.gw1Calls = cost.gw1+after.cpu-before.cpu, cost.gw1Calls+calls
				}
			}
			jwtGW := func() {
				before := gj.usage()
				fig, calls, _ := run(jwtOpts(c, calls(b)))
				after := gj.usage()
				figures[c].jwt = append(figures[c].jwt, fig)
				cost.jwtCalls += calls
				cost.jwt.cpu += after.cpu - before.cpu
				cost.jwt.mallocs += after.mallocs - before.mallocs
				cost.jwt.bytes += after.bytes - before.bytes
			}
			traceGW := func() {
				before, sinkBefore := gt.usage(), sink.cpu(b)
				fig, calls, cpu := run(opts(gt.agentURL("px"), c, calls(b)))
				after := gt.usage()
				cost.sink += sink.cpu(b) - sinkBefore
				figures[c].trace = append(figures[c].trace, fig)
				cost.traceCalls, cost.benchTrace = cost.traceCalls+calls, cost.benchTrace+cpu
				cost.trace.cpu += after.cpu - before.cpu
				cost.trace.mallocs += after.mallocs - before.mallocs
				cost.trace.bytes += after.bytes - before.bytes
			}
			// ABBA: no path always runs first, and the plain gateway sits
			// between the two variants it is compared with.
			paths := []func(){direct, jwtGW, gw, traceGW}
			if r%2 == 1 {
				slices.Reverse(paths)
			}
			for _, p := range paths {
				p()
			}
			fig, _, _ := run(opts(floor+"/mcp", c, calls(b)))
			figures[c].floor = append(figures[c].floor, fig)
			if nginx != nil {
				before := nginx.cpu(b)
				fig, calls, _ := run(opts(nginx.url+"/mcp", c, calls(b)))
				cost.nginx += nginx.cpuSince(b, before)
				cost.nginxCalls += calls
				figures[c].nginx = append(figures[c].nginx, fig)
			}
		}
	}
	if n := issuer.keyFetches.Load(); n != 1 {
		b.Errorf("the JWT-on gateway fetched the key set %d times, want once (cached)", n)
	}
	if sink.exports(b) == 0 {
		b.Errorf("the tracing-on gateway exported no spans")
	}
	g.profileLoad("routing-"+string(style), opts(g.agentURL("px"), 64, 0))
	gj.profileLoad("routing-"+string(style)+"-jwt", jwtOpts(64, 0))
	gt.profileLoad("routing-"+string(style)+"-traced", opts(gt.agentURL("px"), 64, 0))
	// Each round's tracing on ÷ off at 64 callers: on two shared cores a
	// burst of other work during one short run moves a round's ratio far
	// more than tracing does, and the median hides how far.
	var perRound []string
	for i, t := range figures[64].trace {
		perRound = append(perRound, fmt.Sprintf("%.2f", t.rate/figures[64].gw[i].rate))
	}
	b.Logf("tracing on ÷ off, 64 callers, by round: %s", strings.Join(perRound, " "))
	reportRouting(b, style, order, summarize(figures[1]), summarize(figures[64]), cost)
}

// routingSummary is the medians over rounds of one concurrency; the f
// fields are the bare reverse proxy's (added p50 and throughput ratio
// against the direct path).
type routingSummary struct {
	dP50, dP99, gP50, gP99, addP50, addP99, dRate, gRate, ratio float64
	fAddP50, fRatio                                             float64
	nAddP50, nRatio                                             float64 // nginx's; NaN without it
	// The JWT-on gateway's: p50, added p50 and throughput ratio against
	// the direct path; jOwnP50 and jRatioGW against the gateway without
	// auth (medians of per-round differences and ratios).
	jP50, jRate, jAddP50, jRatio, jOwnP50, jRatioGW float64
	// The tracing-on gateway's throughput, its own added p50 and its
	// throughput ratio against the gateway with tracing off.
	tRate, tOwnP50, tRatioGW float64
}

func summarize(p *routingPaths) routingSummary {
	var add50, add99, ratio, d50, d99, g50, g99, dr, gr, fAdd50, fRatio, nAdd50, nRatio []float64
	var j50, jr, jAdd50, jRatio, jOwn50, jRatioGW []float64
	var tr, tOwn50, tRatioGW []float64
	for i := range p.direct {
		d, w, f, j := p.direct[i], p.gw[i], p.floor[i], p.jwt[i]
		t := p.trace[i]
		tr, tOwn50, tRatioGW = append(tr, t.rate), append(tOwn50, t.p50-w.p50), append(tRatioGW, t.rate/w.rate)
		j50, jr, jAdd50, jRatio = append(j50, j.p50), append(jr, j.rate), append(jAdd50, j.p50-d.p50), append(jRatio, j.rate/d.rate)
		jOwn50, jRatioGW = append(jOwn50, j.p50-w.p50), append(jRatioGW, j.rate/w.rate)
		add50, add99, ratio = append(add50, w.p50-d.p50), append(add99, w.p99-d.p99), append(ratio, w.rate/d.rate)
		d50, d99, g50, g99 = append(d50, d.p50), append(d99, d.p99), append(g50, w.p50), append(g99, w.p99)
		dr, gr = append(dr, d.rate), append(gr, w.rate)
		fAdd50, fRatio = append(fAdd50, f.p50-d.p50), append(fRatio, f.rate/d.rate)
		if i < len(p.nginx) {
			n := p.nginx[i]
			nAdd50, nRatio = append(nAdd50, n.p50-d.p50), append(nRatio, n.rate/d.rate)
		}
	}
	return routingSummary{dP50: median(d50), dP99: median(d99), gP50: median(g50), gP99: median(g99),
		addP50: median(add50), addP99: median(add99), dRate: median(dr), gRate: median(gr), ratio: median(ratio),
		fAddP50: median(fAdd50), fRatio: median(fRatio), nAddP50: medianOrNaN(nAdd50), nRatio: medianOrNaN(nRatio),
		jP50: median(j50), jRate: median(jr), jAddP50: median(jAdd50), jRatio: median(jRatio), jOwnP50: median(jOwn50), jRatioGW: median(jRatioGW),
		tRate: median(tr), tOwnP50: median(tOwn50), tRatioGW: median(tRatioGW)}
}

// newForwarder starts a bare reverse proxy to target in a process of its
// own, as the gateway is (this test binary again, serveForwarder), and
// returns its base URL. In this process it would share the load
// generator's and the downstream's scheduler and threads, which are already
// awake when a request arrives: each hop to another process instead wakes
// that process's threads, on the same two cores.
func newForwarder(b *testing.B, target string) string {
	b.Helper()
	url, _ := startChild(b, forwardEnv+"="+target, "the bare reverse proxy")
	return url
}

// startChild runs this test binary again with env added, until the
// benchmark ends, and returns the base URL it prints and its pid.
func startChild(b *testing.B, env, what string) (string, int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	endsWithUs(cmd, syscall.SIGKILL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("starting %s: %v", what, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}

// startNginx starts nginx (when it is installed) as a reverse proxy to
// target, configured as configs/nginx/pallasgw.conf proxies the gateway
// (HTTP/1.1 with keep-alive upstream connections, no buffering); nil
// without nginx. It is the other floor: a hop through the reverse proxy
// operators put in front of the gateway.
func startNginx(b *testing.B, target string) *nginxHop {
	b.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/nginx"); err != nil {
			b.Log("nginx not found: no nginx row")
			return nil
		}
		bin = "/usr/sbin/nginx"
	}
	dir := b.TempDir()
	port := gwtest.FreePorts(b, 1)[0]
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers as nobody could not enter the temp directory
	}
	conf := filepath.Join(dir, "nginx.conf")
	err = os.WriteFile(conf, []byte(fmt.Sprintf(`%[1]s
worker_processes auto;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    upstream down { server %[3]s; keepalive 128; }
    server {
        listen 127.0.0.1:%[4]d;
        location / {
            proxy_pass http://down;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
        }
    }
}
`, user, dir, strings.TrimPrefix(target, "http://"), port)), 0o600)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// SIGTERM: the master stops its workers (a killed master leaves them).
	endsWithUs(cmd, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		b.Logf("nginx did not start (%v): no nginx row", err)
		return nil
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); <-exited })
	// It is a row for scale: an nginx that does not come up is left out,
	// not a failed benchmark.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return &nginxHop{url: fmt.Sprintf("http://127.0.0.1:%d", port), pid: cmd.Process.Pid}
		}
		select {
		case <-exited:
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			b.Logf("nginx exited at start: no nginx row\n%s", errLog)
			return nil
		default:
		}
		if time.Now().After(deadline) {
			b.Logf("nginx did not listen on 127.0.0.1:%d within 10s: no nginx row", port)
			return nil
		}
	}
}

// nginxHop is a running nginx: its base URL and its master's pid.
type nginxHop struct {
	url string
	pid int
}

// cpu is the user+system CPU time so far of each of nginx's processes, by
// pid: the master and its children (the workers), each read from
// /proc/<pid>/stat as the gateway's is.
func (n *nginxHop) cpu(b *testing.B) map[int]time.Duration {
	b.Helper()
	out := map[int]time.Duration{}
	for _, pid := range append([]int{n.pid}, procChildren(n.pid)...) {
		d, err := procCPU(strconv.Itoa(pid))
		if err != nil {
			if pid == n.pid {
				b.Fatalf("reading nginx's CPU time: %v", err)
			}
			continue // a worker that has just exited
		}
		out[pid] = d
	}
	return out
}

// cpuSince is nginx's CPU time since the reading before: what each process
// read then has spent since, and the whole of any started since. A worker
// that exits in between is left out (nginx's workers live as long as their
// master unless it is reloaded, which the benchmark never does).
func (n *nginxHop) cpuSince(b *testing.B, before map[int]time.Duration) time.Duration {
	b.Helper()
	var d time.Duration
	for pid, t := range n.cpu(b) {
		d += t - before[pid]
	}
	return d
}

// procChildren lists the pids of pid's child processes: from
// /proc/<pid>/task/*/children, or, on kernels without that file, by
// scanning /proc for processes whose parent is pid.
func procChildren(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	found := false
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		found = true
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	if found {
		return out
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the parenthesised command name: state, then ppid.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// forwardEnv names the target of serveForwarder.
const forwardEnv = "PALLASGW_BENCH_FORWARD_TO"

// serveForwarder is the bare reverse proxy's process: it serves on
// 127.0.0.1, prints its base URL, and runs until it is killed.
func serveForwarder(target string) int {
	u, err := url.Parse(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}
	rp.FlushInterval = -1 // stream SSE as the gateway does
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("http://%s\n", ln.Addr())
	fmt.Fprintln(os.Stderr, http.Serve(ln, rp))
	return 1
}

func reportRouting(b *testing.B, style load.Style, order int, one, many routingSummary, cost routingCost) {
	cpu, allocs, bytes := perCall(usage{}, cost.gw, cost.gatewayCalls)
	perDirect, perGWBench := cost.benchDirect/time.Duration(cost.directCalls), cost.benchGW/time.Duration(cost.gatewayCalls)
	cpuRatio := float64(perGWBench+cpu) / float64(perDirect)
	minRatio, ratioTarget := targetThroughput(style)
	// nginx's CPU per call over all its measured runs, as the gateway's is
	// over all of its own; no figure without nginx.
	haveNginx := cost.nginxCalls > 0
	var nginxCPU time.Duration
	var nginxRatio float64
	if haveNginx {
		nginxCPU = cost.nginx / time.Duration(cost.nginxCalls)
		nginxRatio = float64(cpu) / float64(max(nginxCPU, 1))
	}
	jCPU, jAllocs, jBytes := perCall(usage{}, cost.jwt, cost.jwtCalls)
	jCPURatio := float64(jCPU) / float64(max(cpu, 1))
	// The JWT-on gateway's added p50 at 1 caller as a multiple of the one
	// without auth (NaN when that is not above zero: no ratio to show).
	jAddRatio := math.NaN()
	if one.addP50 > 0 {
		jAddRatio = one.jAddP50 / one.addP50
	}
	reportGateway(b, cpu, allocs, bytes)
	b.ReportMetric(one.addP50*1000, "c1-added-p50-µs")
	b.ReportMetric(one.addP99*1000, "c1-added-p99-µs")
	b.ReportMetric(many.addP50*1000, "c64-added-p50-µs")
	b.ReportMetric(many.addP99*1000, "c64-added-p99-µs")
	b.ReportMetric(many.ratio, "c64-throughput-ratio")
	b.ReportMetric(one.jAddP50*1000, "jwt-c1-added-p50-µs")
	b.ReportMetric(many.jRatioGW, "jwt/noauth-c64-throughput")
	b.ReportMetric(many.tRatioGW, "traced/untraced-c64-throughput")
	tCPU, tAllocs, tBytes := perCall(usage{}, cost.trace, cost.traceCalls)
	perTraceBench := cost.benchTrace / time.Duration(max(cost.traceCalls, 1))
	perSink := cost.sink / time.Duration(max(cost.traceCalls, 1))
	if haveNginx {
		b.ReportMetric(float64(nginxCPU)/float64(time.Microsecond), "nginx-cpu-µs/call")
		b.ReportMetric(nginxRatio, "gw/nginx-cpu-ratio")
	}
	cpuTarget := fmt.Sprintf("≤ %.0f× nginx's", targetCPUvNginx)

	b.Logf("routing, %s style, %d calls per path and round, %d rounds (medians):\n%s", style, calls(b), rounds(),
		table([]string{"callers", "figure", "direct", "via proxy", "added / ratio", "target"}, func(add func(...string)) {
			add("1", "p50", fmtMS(one.dP50), fmtMS(one.gP50), fmtAdded(one.addP50), fmt.Sprintf("+%.2f ms ", targetAddedP50)+verdict(one.addP50 <= targetAddedP50))
			add("1", "p99", fmtMS(one.dP99), fmtMS(one.gP99), fmtAdded(one.addP99), "")
			add("1", "calls/s", fmtRate(one.dRate), fmtRate(one.gRate), fmt.Sprintf("%.2f", one.ratio), "")
			add("64", "p50", fmtMS(many.dP50), fmtMS(many.gP50), fmtAdded(many.addP50), "")
			add("64", "p99", fmtMS(many.dP99), fmtMS(many.gP99), fmtAdded(many.addP99), "")
			add("64", "calls/s", fmtRate(many.dRate), fmtRate(many.gRate), fmt.Sprintf("%.2f", many.ratio), fmt.Sprintf("≥ %.2f ", minRatio)+verdict(many.ratio >= minRatio))
			add("", "CPU/call, all processes", us(perDirect), us(perGWBench+cpu), fmt.Sprintf("%.2f", cpuRatio), "")
			add("", "  of which the gateway", "", us(cpu), "", "")
			add("1", "  the gateway's, 1 caller", "", us(cost.gw1/time.Duration(max(cost.gw1Calls, 1))), "", "")
			add("", "gateway allocs/call", "", fmt.Sprintf("%.0f (%.1f kB)", allocs, bytes/1024), "", "")
			add("1", "p50, JWT on", fmtMS(one.dP50), fmtMS(one.jP50), fmtAdded(one.jAddP50), "")
			add("1", "  added p50, JWT on ÷ no auth", "", "", fmtRatio(jAddRatio)+" ("+fmtAdded(one.jOwnP50)+")", "")
			add("64", "calls/s, JWT on", fmtRate(many.dRate), fmtRate(many.jRate), fmt.Sprintf("%.2f", many.jRatio), "")
			add("64", "  calls/s, JWT on ÷ no auth", "", "", fmt.Sprintf("%.2f", many.jRatioGW), fmt.Sprintf("≥ %.2f ", targetJWTRatio)+verdict(many.jRatioGW >= targetJWTRatio))
			add("", "gateway CPU/call, JWT on", "", us(jCPU), fmt.Sprintf("%.2f× no auth's", jCPURatio), "")
			add("", "gateway allocs/call, JWT on", "", fmt.Sprintf("%.0f (%.1f kB)", jAllocs, jBytes/1024), "", "")
			add("1", "  added p50, tracing on − off", "", "", fmtAdded(one.tOwnP50), "")
			add("64", "calls/s, tracing on (100%, OTLP)", fmtRate(many.dRate), fmtRate(many.tRate), "", "")
			add("64", "  calls/s, tracing on ÷ off", "", "", fmt.Sprintf("%.2f", many.tRatioGW), fmt.Sprintf("≥ %.2f ", targetTraceRatio)+verdict(many.tRatioGW >= targetTraceRatio))
			add("", "gateway CPU/call, tracing on", "", us(tCPU), fmt.Sprintf("%.2f× off's", float64(tCPU)/float64(max(cpu, 1))), "")
			add("", "gateway allocs/call, tracing on", "", fmt.Sprintf("%.0f (%.1f kB)", tAllocs, tBytes/1024), "", "")
			add("", "CPU/call, all processes, tracing on", "", us(perTraceBench+tCPU+perSink), fmt.Sprintf("%.2f× off's", float64(perTraceBench+tCPU+perSink)/float64(max(perGWBench+cpu, 1))), "")
			add("", "  of which load generator and downstream", "", us(perTraceBench), fmt.Sprintf("off: %s", us(perGWBench)), "")
			add("", "  of which the OTLP sink", "", us(perSink), "", "")
			add("1", "p50, bare reverse proxy", "", "", fmtAdded(one.fAddP50), "for scale")
			add("64", "calls/s, bare reverse proxy", "", "", fmt.Sprintf("%.2f", many.fRatio), "for scale")
			if !math.IsNaN(one.nAddP50) {
				add("1", "p50, nginx", "", "", fmtAdded(one.nAddP50), "for scale")
				add("64", "calls/s, nginx", "", "", fmt.Sprintf("%.2f", many.nRatio), "for scale")
			}
			if haveNginx {
				add("", "CPU/call, nginx (master+workers)", "", us(nginxCPU), "", "")
				add("", "gateway CPU/call ÷ nginx's", "", "", fmt.Sprintf("%.2f", nginxRatio), cpuTarget+" "+verdict(nginxRatio <= targetCPUvNginx))
			}
		}))

	m, o := "routing "+string(style)+": ", order*10
	record(o+0, m+"added p50, 1 caller", fmt.Sprintf("≤ %.2f ms", targetAddedP50), fmtAdded(one.addP50), fmtMS(one.dP50), fmt.Sprintf("%.2f×", one.gP50/one.dP50))
	record(o+1, m+"added p99, 1 caller", "", fmtAdded(one.addP99), fmtMS(one.dP99), fmt.Sprintf("%.2f×", one.gP99/one.dP99))
	record(o+2, m+"added p50, 64 callers", "", fmtAdded(many.addP50), fmtMS(many.dP50), fmt.Sprintf("%.2f×", many.gP50/many.dP50))
	record(o+3, m+"added p99, 64 callers", "", fmtAdded(many.addP99), fmtMS(many.dP99), fmt.Sprintf("%.2f×", many.gP99/many.dP99))
	record(o+4, m+"throughput, 64 callers", ratioTarget, fmtRate(many.gRate), fmtRate(many.dRate), fmt.Sprintf("%.0f%%", 100*many.ratio))
	record(o+5, m+"CPU per call: gateway (allocs); all processes vs direct", "",
		fmt.Sprintf("%s (%.0f allocs, %.1f kB); %s", us(cpu), allocs, bytes/1024, us(perGWBench+cpu)),
		us(perDirect)+" (client+server)", fmt.Sprintf("%.2f×", cpuRatio))
	if haveNginx {
		record(o+6, m+"gateway CPU per call against an nginx hop's", cpuTarget,
			us(cpu), "nginx "+us(nginxCPU), fmt.Sprintf("%.2f× nginx's (%.2f× target)", nginxRatio, nginxRatio/targetCPUvNginx))
	}
	j := m + "JWT on (RS256, key cached): "
	record(o+9, j+"added p50, 1 caller, against no auth", "", fmt.Sprintf("%s (no auth %s)", fmtAdded(one.jAddP50), fmtAdded(one.addP50)),
		fmtMS(one.dP50), fmt.Sprintf("%s no auth's added p50 (JWT's own %s)", fmtRatio(jAddRatio), fmtAdded(one.jOwnP50)))
	record(o+9, j+"throughput, 64 callers, against no auth", fmt.Sprintf("≥ %.0f%% of no auth", 100*targetJWTRatio),
		fmt.Sprintf("%s (no auth %s)", fmtRate(many.jRate), fmtRate(many.gRate)), fmtRate(many.dRate),
		fmt.Sprintf("%.0f%% of no auth (%.0f%% of direct)", 100*many.jRatioGW, 100*many.jRatio))
	record(o+9, j+"gateway CPU per call (allocs), against no auth", "",
		fmt.Sprintf("%s (%.0f allocs, %.1f kB); no auth %s", us(jCPU), jAllocs, jBytes/1024, us(cpu)), "", fmt.Sprintf("%.2f× no auth's", jCPURatio))
	record(o+9, m+"tracing on (100%, OTLP/HTTP): throughput, 64 callers, against off", fmt.Sprintf("≥ %.0f%% of off", 100*targetTraceRatio),
		fmt.Sprintf("%s (off %s)", fmtRate(many.tRate), fmtRate(many.gRate)), "", fmt.Sprintf("%.0f%% of off; CPU/call %s (off %s)", 100*many.tRatioGW, us(tCPU), us(cpu)))
	record(o+7, m+"a bare reverse proxy instead, for scale: added p50, 1 caller; throughput, 64 callers", "",
		fmt.Sprintf("%s; %.0f%%", fmtAdded(one.fAddP50), 100*many.fRatio), "", "")
	if !math.IsNaN(one.nAddP50) {
		record(o+8, m+"nginx instead, for scale: added p50, 1 caller; throughput, 64 callers", "",
			fmt.Sprintf("%s; %.0f%%", fmtAdded(one.nAddP50), 100*many.nRatio), "", "")
	}
}
