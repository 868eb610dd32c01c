//go:build e2e

package e2e

// "Any replica serves any request": three pallasgw replicas sharing one
// config (same state_key, drain_delay 2s) behind the shipped proxy configs,
// nginx round-robin without affinity (TestReplicasNginx) and Caddy
// (TestReplicasCaddy). The official conformance suite through the pool
// scores no fewer passing scenarios than through one gateway; Go SDK
// clients (session-based, one session each for the whole run) and
// sessionless 2026-07-28 callers keep calling a fast tool while a replica
// is killed with SIGKILL (only calls in flight on it may fail, and every
// caller's next calls succeed without a new initialize) and while every
// replica in turn is restarted on its port (no call fails).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

const replicaCount = 3

// replicaConfig is the one config every replica runs, sharing state_key and
// the session store (a redis-server of the test). {{PORT}} is each
// replica's own port.
const replicaConfig = `
name: replicas
namespace: dev.pallasgw.e2e
listen: "127.0.0.1:{{PORT}}"
# nginx and Caddy connect from loopback: believe their X-Forwarded-*.
trusted_proxies: ["127.0.0.1/32", "::1/128"]
state_key: "{{STATE_KEY}}"
drain_delay: 2s
{{SESSIONS}}
mcp:
  servers:
    down: {url: "{{DOWNSTREAM}}", timeout: 60s}
agents:
  px: {kind: proxy, servers: [down]}
`

// replicaConfigFor fills replicaConfig: a fresh state_key shared by every
// replica started on it, the downstream, and the session store.
func replicaConfigFor(t *testing.T, downstream string) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	url, _ := startRedis(t)
	sessions := fmt.Sprintf("sessions: {store: %q}", url)
	return strings.NewReplacer("{{STATE_KEY}}", base64.StdEncoding.EncodeToString(key),
		"{{SESSIONS}}", sessions, "{{DOWNSTREAM}}", downstream).Replace(replicaConfig)
}

// replicaLogLevel is the replicas' --log-level: info, as under load debug
// costs the race-enabled binaries most of the two cores;
// PALLASGW_E2E_REPLICAS_LOG=debug for a closer look.
func replicaLogLevel() string {
	if l := os.Getenv("PALLASGW_E2E_REPLICAS_LOG"); l != "" {
		return l
	}
	return "info"
}

// replica is one slot of the pool: a port and a config file that outlive
// the processes run on them.
type replica struct {
	port    int
	cfgPath string
	gw      *gateway   // the current process
	gens    []*gateway // every process run in this slot
}

// replicaPool is replicaCount gateways on fixed ports, one config. Its
// processes belong to the test that started the pool (stopped when it
// ends); restarting one (term, kill, start) is the test's own doing.
type replicaPool struct {
	t        *testing.T
	replicas []*replica
}

func replicaOptions(cfg, cfgPath string, port int) gwtest.Options {
	return gwtest.Options{Config: cfg, ConfigPath: cfgPath, Port: port, ProcessGroup: true, LogLevel: replicaLogLevel(),
		StopTimeout: 15 * time.Second, TailBytes: 8000, LogOnFailure: true, ReadyTimeout: 60 * time.Second}
}

// startPool runs one gateway per port on cfg, each from its own copy of
// the file (a gateway watches its config's directory).
func startPool(t *testing.T, cfg string, ports []int) *replicaPool {
	t.Helper()
	p := &replicaPool{t: t}
	for _, port := range ports {
		g := &gateway{gwtest.Start(t, replicaOptions(cfg, "", port))}
		p.replicas = append(p.replicas, &replica{port: port, cfgPath: g.ConfigPath, gw: g, gens: []*gateway{g}})
	}
	return p
}

// kill ends replica i with SIGKILL and returns once the process is gone.
func (p *replicaPool) kill(i int) {
	p.t.Helper()
	g := p.replicas[i].gw
	if err := g.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("SIGKILL replica %d: %v", i, err)
	}
	select {
	case <-g.Exited():
	case <-time.After(10 * time.Second):
		p.t.Fatalf("replica %d still running 10s after SIGKILL", i)
	}
}

// term sends replica i one SIGTERM (so drain_delay runs in full, as under
// an orchestrator) and waits for it to exit, which must be with code 0.
func (p *replicaPool) term(i int) {
	p.t.Helper()
	g := p.replicas[i].gw
	if err := g.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM replica %d: %v", i, err)
	}
	select {
	case <-g.Exited():
	case <-time.After(45 * time.Second):
		p.t.Fatalf("replica %d did not exit within 45s of SIGTERM (drain_delay 2s, shutdown_timeout 30s):\n%s", i, g.Tail())
	}
	if code := g.ExitCode(); code != 0 {
		p.t.Errorf("replica %d exited with %d on SIGTERM:\n%s", i, code, g.Tail())
	}
}

// start runs replica i again on the same port and config file, and
// returns once its /readyz is 200.
func (p *replicaPool) start(i int) {
	p.t.Helper()
	r := p.replicas[i]
	select {
	case <-r.gw.Exited():
	default:
		p.t.Fatalf("replica %d is still running", i)
	}
	g := &gateway{gwtest.Start(p.t, replicaOptions("", r.cfgPath, r.port))}
	r.gw = g
	r.gens = append(r.gens, g)
}

// logMetrics logs, per running replica, its HTTP requests by code and its
// session rejections (a foreign rejection would mean a session id sealed
// by one replica was refused by another).
func (p *replicaPool) logMetrics(t *testing.T) {
	t.Helper()
	var b strings.Builder
	codeRe := regexp.MustCompile(`code="([^"]*)"`)
	for i, r := range p.replicas {
		select {
		case <-r.gw.Exited():
			fmt.Fprintf(&b, "  replica %d (:%d): not running\n", i, r.port)
			continue
		default:
		}
		m, err := r.gw.Metrics()
		if err != nil {
			fmt.Fprintf(&b, "  replica %d (:%d): %v\n", i, r.port, err)
			continue
		}
		codes := map[string]float64{}
		var rejected []string
		for k, v := range m {
			if strings.HasPrefix(k, "pallasgw_http_requests_total{") {
				if c := codeRe.FindStringSubmatch(k); c != nil {
					codes[c[1]] += v
				}
			}
			if strings.HasPrefix(k, "pallasgw_session_rejections_total{") && v > 0 {
				rejected = append(rejected, fmt.Sprintf("%s=%v", k, v))
				t.Errorf("replica %d rejected sessions: %s %v", i, k, v)
			}
		}
		fmt.Fprintf(&b, "  replica %d (:%d, process %d of the slot): http requests by code %v; session rejections %v\n",
			i, r.port, len(r.gens), codes, rejected)
	}
	t.Logf("replica metrics:\n%s", b.String())
}

// startEchoDownstream runs a go-sdk MCP server (stateless, JSON answers)
// with one fast tool, echo, answering its text; returns its MCP URL.
func startEchoDownstream(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo-downstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to answer"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Answers its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0]))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { hs.Serve(l); close(done) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return "http://" + l.Addr().String() + "/mcp"
}

// ---- the load ----

// loadOptions bound a load run in count and time.
type loadOptions struct {
	sdk, raw int           // callers of each kind
	maxCalls int           // per caller
	maxTime  time.Duration // no call starts after this
	pace     time.Duration // pause between a caller's calls
	callTime time.Duration // one call's timeout
}

var defaultLoad = loadOptions{sdk: 16, raw: 16, maxCalls: 2000, maxTime: 20 * time.Second,
	pace: 20 * time.Millisecond, callTime: 10 * time.Second}

// callRecord is one call of one caller.
type callRecord struct {
	caller     string
	phase      string
	start, end time.Time
	err        error
}

// sdkCaller is one session-based Go SDK client (2025-11-25), connected
// once; its HTTP client counts the initialize requests it sends and the
// session ids it presents.
type sdkCaller struct {
	name  string
	base  http.RoundTripper
	cs    *mcp.ClientSession
	inits atomic.Int32

	mu       sync.Mutex
	sessions map[string]int // Mcp-Session-Id sent → requests
	statuses map[int]int    // HTTP status of its responses → count
	posts    int
}

func (c *sdkCaller) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(body)
			if bytes.Contains(raw, []byte(`"method":"initialize"`)) {
				c.inits.Add(1)
			}
		}
	}
	c.mu.Lock()
	if sid := req.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sessions[sid]++
	}
	if req.Method == http.MethodPost {
		c.posts++
	}
	c.mu.Unlock()
	resp, err := c.base.RoundTrip(req)
	if err == nil {
		c.mu.Lock()
		c.statuses[resp.StatusCode]++
		c.mu.Unlock()
	}
	return resp, err
}

// loadRun is a running load: every caller calls echo through the proxy
// until stopped, maxCalls or maxTime.
type loadRun struct {
	t      *testing.T
	o      loadOptions
	url    string
	phase  atomic.Pointer[string]
	phases []string // in the order set
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	sdk    []*sdkCaller
	rawTr  *http.Transport
	sdkTr  *http.Transport
	began  time.Time

	mu    sync.Mutex
	calls []callRecord
}

// startLoad connects the session-based callers, then starts every caller.
// It is stopped (and waited for) when the test ends at the latest.
func startLoad(t *testing.T, url string, o loadOptions, phase string) *loadRun {
	t.Helper()
	l := &loadRun{t: t, o: o, url: url, stop: make(chan struct{}),
		rawTr: &http.Transport{MaxIdleConnsPerHost: 2 * o.raw, IdleConnTimeout: 30 * time.Second},
		sdkTr: &http.Transport{MaxIdleConnsPerHost: 4 * o.sdk, IdleConnTimeout: 30 * time.Second}}
	l.setPhase(phase)
	t.Cleanup(l.halt)
	for i := range o.sdk {
		c := &sdkCaller{name: fmt.Sprintf("sdk-%02d", i), base: l.sdkTr, sessions: map[string]int{}, statuses: map[int]int{}}
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e-replicas-" + c.name, Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: c}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		cancel()
		if err != nil {
			t.Fatalf("%s: connect %s: %v", c.name, url, err)
		}
		if cs.ID() == "" {
			t.Fatalf("%s: no Mcp-Session-Id: the session-based client runs sessionless", c.name)
		}
		c.cs = cs
		l.sdk = append(l.sdk, c)
	}
	l.began = time.Now()
	for _, c := range l.sdk {
		l.wg.Add(1)
		go l.loop(c.name, func(ctx context.Context, _ int, text string) error { return sdkEcho(ctx, c.cs, text) })
	}
	hc := &http.Client{Transport: l.rawTr}
	for i := range o.raw {
		name := fmt.Sprintf("raw-%02d", i)
		l.wg.Add(1)
		go l.loop(name, func(ctx context.Context, id int, text string) error { return rawEcho(ctx, hc, url, id, text) })
	}
	return l
}

func (l *loadRun) setPhase(p string) {
	l.mu.Lock()
	l.phases = append(l.phases, p)
	l.mu.Unlock()
	l.phase.Store(&p)
}

// loop is one caller: calls until stopped, o.maxCalls or o.maxTime.
func (l *loadRun) loop(name string, call func(ctx context.Context, id int, text string) error) {
	defer l.wg.Done()
	deadline := l.began.Add(l.o.maxTime)
	for i := 1; i <= l.o.maxCalls && time.Now().Before(deadline); i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		text := fmt.Sprintf("%s call %d", name, i)
		ctx, cancel := context.WithTimeout(context.Background(), l.o.callTime)
		rec := callRecord{caller: name, phase: *l.phase.Load(), start: time.Now()}
		rec.err = call(ctx, i, text)
		rec.end = time.Now()
		cancel()
		l.mu.Lock()
		l.calls = append(l.calls, rec)
		l.mu.Unlock()
		select {
		case <-l.stop:
			return
		case <-time.After(l.o.pace):
		}
	}
}

// halt stops every caller, waits for them, and closes the sessions.
func (l *loadRun) halt() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		for _, c := range l.sdk {
			c.cs.Close()
		}
		l.rawTr.CloseIdleConnections()
		l.sdkTr.CloseIdleConnections()
	})
}

// exhausted reports whether a caller has stopped on its count or time
// bound (the run is over before the test said so).
func (l *loadRun) exhausted() bool {
	return time.Since(l.began) > l.o.maxTime
}

// waitEach waits until every caller has n successful calls started after
// since; it fails the test after timeout.
func (l *loadRun) waitEach(what string, since time.Time, n int, timeout time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok := map[string]int{}
		l.mu.Lock()
		for _, c := range l.calls {
			if c.err == nil && c.start.After(since) {
				ok[c.caller]++
			}
		}
		l.mu.Unlock()
		var short []string
		for _, name := range l.callers() {
			if ok[name] < n {
				short = append(short, fmt.Sprintf("%s:%d", name, ok[name]))
			}
		}
		if len(short) == 0 {
			return
		}
		if time.Now().After(deadline) || l.exhausted() {
			l.t.Fatalf("%s: callers with fewer than %d successful calls after %s: %v", what, n, since.Format("15:04:05.000"), short)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *loadRun) callers() []string {
	var names []string
	for _, c := range l.sdk {
		names = append(names, c.name)
	}
	for i := range l.o.raw {
		names = append(names, fmt.Sprintf("raw-%02d", i))
	}
	return names
}

func (l *loadRun) records() []callRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]callRecord(nil), l.calls...)
}

// sdkEcho calls echo on a session and checks the answer.
func sdkEcho(ctx context.Context, cs *mcp.ClientSession, text string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		return err
	}
	return checkEcho(res.IsError, res.Content, text)
}

func checkEcho(isError bool, content []mcp.Content, text string) error {
	var got []string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			got = append(got, tc.Text)
		}
	}
	if isError {
		return fmt.Errorf("isError result: %s", strings.Join(got, " "))
	}
	if len(got) != 1 || got[0] != text {
		return fmt.Errorf("wrong answer %q, want %q", got, text)
	}
	return nil
}

// rawEcho is one sessionless (2026-07-28) tools/call POSTed as plain
// JSON-RPC, as test/load and test/bench send it.
func rawEcho(ctx context.Context, hc *http.Client, url string, id int, text string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": "echo", "arguments": map[string]any{"text": text}, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-replicas", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var found []byte
		for _, line := range strings.Split(string(raw), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok && strings.Contains(data, `"id":`+strconv.Itoa(id)) {
				found = []byte(data)
			}
		}
		if found == nil {
			return fmt.Errorf("SSE stream without the answer: %.200s", raw)
		}
		raw = found
	}
	var r struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type, Text string
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Code    int
			Message string
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("bad answer: %w: %.200s", err, raw)
	}
	if r.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	}
	if r.Result == nil {
		return fmt.Errorf("answer without result: %.200s", raw)
	}
	var content []mcp.Content
	for _, c := range r.Result.Content {
		if c.Type == "text" {
			content = append(content, &mcp.TextContent{Text: c.Text})
		}
	}
	return checkEcho(r.Result.IsError, content, text)
}

// errorKind sorts a failed call by what the caller saw.
func errorKind(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(s, "deadline exceeded"):
		return "timeout"
	case errors.Is(err, mcp.ErrSessionMissing) || strings.Contains(s, "HTTP 404") || strings.Contains(s, "Not Found"):
		return "404 session"
	case strings.Contains(s, "Bad Gateway") || strings.Contains(s, "HTTP 502"):
		return "502"
	case strings.Contains(s, "Service Unavailable") || strings.Contains(s, "HTTP 503"):
		return "503"
	case strings.Contains(s, "Gateway Timeout") || strings.Contains(s, "HTTP 504"):
		return "504"
	case strings.Contains(s, "connection reset"):
		return "connection reset"
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "EOF"):
		return "EOF"
	case strings.Contains(s, "closed") || strings.Contains(s, "closing"):
		return "session closed"
	case strings.Contains(s, "isError"):
		return "isError"
	case strings.Contains(s, "JSON-RPC error") || strings.Contains(s, "jsonrpc"):
		return "JSON-RPC error"
	case strings.Contains(s, "wrong answer"):
		return "wrong answer"
	}
	return "other"
}

// phaseStats is the figures of one phase.
type phaseStats struct {
	calls, errs int
	kinds       map[string]int
	example     map[string]string
	minStart    time.Time
	maxEnd      time.Time
}

// report logs calls and errors by kind per phase (calls sorted into the
// phase in force when they started) and for each caller kind, and the
// session-based callers' initialize count and session ids.
func (l *loadRun) report(t *testing.T, title string) map[string]*phaseStats {
	t.Helper()
	recs := l.records()
	stats := map[string]*phaseStats{}
	get := func(name string) *phaseStats {
		s := stats[name]
		if s == nil {
			s = &phaseStats{kinds: map[string]int{}, example: map[string]string{}}
			stats[name] = s
		}
		return s
	}
	for _, r := range recs {
		for _, name := range []string{r.phase, "all", "all " + strings.SplitN(r.caller, "-", 2)[0]} {
			s := get(name)
			s.calls++
			if s.minStart.IsZero() || r.start.Before(s.minStart) {
				s.minStart = r.start
			}
			if r.end.After(s.maxEnd) {
				s.maxEnd = r.end
			}
			if r.err != nil {
				s.errs++
				k := errorKind(r.err)
				s.kinds[k]++
				if _, ok := s.example[k]; !ok {
					s.example[k] = fmt.Sprintf("%s: %v", r.caller, r.err)
				}
			}
		}
	}
	var b strings.Builder
	l.mu.Lock()
	order := append(append([]string(nil), l.phases...), "all", "all sdk", "all raw")
	l.mu.Unlock()
	seen := map[string]bool{}
	for _, name := range order {
		s := stats[name]
		if s == nil || seen[name] {
			continue
		}
		seen[name] = true
		rate := 0.0
		if d := s.maxEnd.Sub(s.minStart).Seconds(); d > 0 {
			rate = float64(s.calls) / d
		}
		fmt.Fprintf(&b, "  %-34s %6d calls %6d errors  %5.0f calls/s  %v\n", name, s.calls, s.errs, rate, s.kinds)
		for k, e := range s.example {
			if name != "all" && !strings.HasPrefix(name, "all ") {
				fmt.Fprintf(&b, "      e.g. %s: %.300s\n", k, e)
			}
		}
	}
	inits, sids := 0, 0
	for _, c := range l.sdk {
		c.mu.Lock()
		inits += int(c.inits.Load())
		sids += len(c.sessions)
		c.mu.Unlock()
	}
	fmt.Fprintf(&b, "  session-based callers: %d, initialize requests %d, distinct session ids presented %d\n", len(l.sdk), inits, sids)
	statuses := map[int]int{}
	for _, c := range l.sdk {
		c.mu.Lock()
		for k, v := range c.statuses {
			statuses[k] += v
		}
		c.mu.Unlock()
	}
	fmt.Fprintf(&b, "  session-based callers' HTTP statuses: %v\n", statuses)
	t.Logf("%s (%d callers: %d session-based Go SDK, %d sessionless raw; pace %s):\n%s",
		title, l.o.sdk+l.o.raw, l.o.sdk, l.o.raw, l.o.pace, b.String())
	return stats
}

// checkSessionsKept fails the test for a session-based caller that sent
// more than its one initialize or presented more than one session id.
func (l *loadRun) checkSessionsKept(t *testing.T) {
	t.Helper()
	for _, c := range l.sdk {
		c.mu.Lock()
		if n := c.inits.Load(); n != 1 {
			t.Errorf("%s sent %d initialize requests, want 1 (its session must survive)", c.name, n)
		}
		if len(c.sessions) != 1 {
			t.Errorf("%s presented %d session ids, want its one: %v", c.name, len(c.sessions), c.sessions)
		}
		c.mu.Unlock()
	}
}

// ---- the proxies ----

// nginxReplicas is nginx on the shipped site config, one site per
// upstream set, with an access log of each request's upstream tries.
type nginxReplicas struct {
	dir, errLog, accessLog string
	p                      *proc
}

type nginxSite struct {
	listen   int
	upstream string
	ports    []int
	// upstreamHeader adds X-Pallasgw-Upstream ($upstream_addr) to every
	// response, so that a test knows which replica answered.
	upstreamHeader bool
}

// nginxSiteConf adapts configs/nginx/pallasgw.conf: the listen address, the
// upstream's name and its servers (one `server 127.0.0.1:P max_fails=0;`
// line per replica, as the file's comment says); everything else is kept,
// and the test fails when the retry directives it relies on are gone.
func nginxSiteConf(t *testing.T, shipped string, s nginxSite) string {
	t.Helper()
	var servers strings.Builder
	for _, p := range s.ports {
		fmt.Fprintf(&servers, "    server 127.0.0.1:%d max_fails=0;\n", p)
	}
	header := "$0"
	if s.upstreamHeader {
		header = "$0\n    add_header X-Pallasgw-Upstream $$upstream_addr always;" // $$: ReplaceAllString's $
	}
	return substitute(t, "configs/nginx/pallasgw.conf", shipped,
		`(?m)^\s*server_name\s+[^;]*;`, header,
		`(?m)^\s*listen\s+80;`, fmt.Sprintf("    listen 127.0.0.1:%d;", s.listen),
		`(?m)^\s*listen\s+\[::\]:80;\n`, "",
		`(?m)^[ \t]*server\s+127\.0\.0\.1:8200\s+max_fails=0;\n(?:[ \t]*#\s*server\s+127\.0\.0\.1:\d+\s+max_fails=0;\n)*`, servers.String(),
		`upstream\s+pallasgw\s*\{`, "upstream "+s.upstream+" {",
		`proxy_pass\s+http://pallasgw;`, "proxy_pass http://"+s.upstream+";",
		// Asserted, kept as they are:
		`proxy_next_upstream\s+error\s+timeout\s+http_502\s+http_503\s+non_idempotent;`, "$0",
		`keepalive\s+\d+;`, "$0",
	)
}

func startNginxReplicas(t *testing.T, sites ...nginxSite) *nginxReplicas {
	t.Helper()
	nginx := tool(t, "nginx")
	n := &nginxReplicas{dir: t.TempDir()}
	n.errLog = filepath.Join(n.dir, "error.log")
	n.accessLog = filepath.Join(n.dir, "access.log")
	shipped := readRepoFile(t, "configs/nginx/pallasgw.conf")
	var includes strings.Builder
	for _, s := range sites {
		f := writeFile(t, n.dir, s.upstream+".conf", nginxSiteConf(t, shipped, s))
		fmt.Fprintf(&includes, "    include %s;\n", f)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // nobody cannot enter the test's temp directory
	}
	main := fmt.Sprintf(`
%[2]s
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 1024; }
http {
    log_format replicas '$msec $server_port $request_method $uri $status "$upstream_addr" "$upstream_status" $request_time';
    access_log %[1]s/access.log replicas;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[3]s}
`, n.dir, user, includes.String())
	conf := writeFile(t, n.dir, "nginx.conf", main)
	if out, err := exec.Command(nginx, "-t", "-p", n.dir, "-e", n.errLog, "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	n.p = startProc(t, "nginx", exec.Command(nginx, "-p", n.dir, "-e", n.errLog, "-c", conf, "-g", "daemon off;"))
	for _, s := range sites {
		waitFor(t, "nginx to listen", 15*time.Second, n.p, func() error {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.listen), time.Second)
			if err != nil {
				return err
			}
			return c.Close()
		})
	}
	return n
}

// mark is where nginx's logs are now, for summarize.
func (n *nginxReplicas) mark() [2]int64 {
	var m [2]int64
	for i, f := range []string{n.errLog, n.accessLog} {
		if st, err := os.Stat(f); err == nil {
			m[i] = st.Size()
		}
	}
	return m
}

func readFrom(path string, off int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < off {
		return ""
	}
	return string(b[off:])
}

var (
	nginxErrRe      = regexp.MustCompile(`\[(\w+)\] \d+#\d+: (?:\*\d+ )?(.*?)(?:, client: .*?)?(?:, upstream: "http://127\.0\.0\.1:(\d+)[^"]*")?(?:, host: .*)?$`)
	nginxUpstreamRe = regexp.MustCompile(`upstream: "http://(127\.0\.0\.1:\d+)`)
)

// summarize logs what nginx did since m on the site listening on port:
// the POSTs by final status, how many were retried on another upstream and
// with which upstream statuses, the requests each upstream got; and
// error.log's lines of requests to that site (by their Host) grouped by
// message and upstream.
func (n *nginxReplicas) summarize(t *testing.T, m [2]int64, port int, title string) {
	t.Helper()
	finals := map[string]int{}
	perUpstream := map[string]int{}
	tries := map[string]int{}
	posts, retried := 0, 0
	sc := bufio.NewScanner(strings.NewReader(readFrom(n.accessLog, m[1])))
	for sc.Scan() {
		// $msec $server_port $request_method $uri $status "$upstream_addr" "$upstream_status" $request_time
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != strconv.Itoa(port) || f[2] != "POST" {
			continue
		}
		posts++
		finals[f[4]]++
		q := strings.Split(line, `"`)
		if len(q) < 4 {
			continue
		}
		addrs, statuses := q[1], q[3]
		for _, a := range strings.Split(addrs, ", ") {
			perUpstream[a]++
		}
		if strings.Contains(statuses, ",") {
			retried++
			tries[statuses]++
		}
	}
	errs := map[string]int{}
	host := fmt.Sprintf(`host: "127.0.0.1:%d"`, port)
	for _, line := range strings.Split(readFrom(n.errLog, m[0]), "\n") {
		mm := nginxErrRe.FindStringSubmatch(line)
		if mm == nil || mm[1] == "notice" || !strings.Contains(line, host) {
			continue // not of a request to this site (a keep-alive closed, nginx's own notices)
		}
		key := "[" + mm[1] + "] " + mm[2]
		if u := nginxUpstreamRe.FindStringSubmatch(line); u != nil {
			key += " (upstream " + u[1] + ")"
		}
		errs[key]++
	}
	t.Logf("nginx :%d, %s: %d POSTs, final statuses %v; %d retried on another upstream, by upstream statuses %s; tries per upstream %v\n  error.log:\n%s",
		port, title, posts, finals, retried, sortedCounts(tries), perUpstream, indentCounts(errs))
}

func sortedCounts(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("[%s]×%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func indentCounts(m map[string]int) string {
	if len(m) == 0 {
		return "    (nothing)\n"
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "    %5d× %.300s\n", m[k], k)
	}
	return b.String()
}

// ---- the scenarios ----

// killUnderLoad: SIGKILL one replica mid-load. Only calls in flight on it
// (started before it was gone, ended after the kill was sent) may fail, at
// most one per caller; every call started after it was gone succeeds, each
// caller makes more, and the session-based callers keep their one
// session. grace widens "in flight" to the calls started that long after
// the replica was gone, which a proxy that cannot retry a sent request
// (Caddy 2.6) had already sent to it before it noticed (nginx: 0).
func killUnderLoad(t *testing.T, pool *replicaPool, url string, victim int, grace time.Duration) {
	l := startLoad(t, url, defaultLoad, "before the kill")
	l.waitEach("warm-up", time.Time{}, 5, 15*time.Second)
	time.Sleep(time.Second)
	killSent := time.Now()
	l.setPhase("during the kill")
	pool.kill(victim)
	gone := time.Now()
	l.setPhase("after the kill")
	l.waitEach("after the kill", gone, 10, 15*time.Second)
	time.Sleep(time.Second)
	l.halt()
	t.Logf("replica %d (:%d) SIGKILLed at +%s, gone %s later", victim, pool.replicas[victim].port,
		killSent.Sub(l.began).Round(time.Millisecond), gone.Sub(killSent).Round(time.Microsecond))
	l.report(t, "load with a replica killed")

	perCaller := map[string]int{}
	inFlight, inFlightFailed := 0, 0
	for _, r := range l.records() {
		flying := r.start.Before(gone.Add(grace)) && r.end.After(killSent)
		if flying {
			inFlight++
		}
		if r.err == nil {
			continue
		}
		perCaller[r.caller]++
		switch {
		case flying:
			inFlightFailed++
		case r.start.After(gone):
			t.Errorf("%s: a call started %s after the replica was gone failed: %v", r.caller, r.start.Sub(gone).Round(time.Millisecond), r.err)
		default:
			t.Errorf("%s: a call that ended %s before the kill failed: %v", r.caller, killSent.Sub(r.end).Round(time.Millisecond), r.err)
		}
	}
	for c, n := range perCaller {
		if n > 1 {
			t.Errorf("%s: %d failed calls, want at most the one in flight at the kill", c, n)
		}
	}
	t.Logf("calls in flight at the kill: %d, of which failed: %d (allowed: one per caller in flight, %d callers)", inFlight, inFlightFailed, defaultLoad.sdk+defaultLoad.raw)
	l.checkSessionsKept(t)
}

// rollingRestart: under load, SIGTERM each replica in turn, wait for it to
// exit, start it again on its port with its config, wait for /readyz 200,
// then the next. No call may fail.
func rollingRestart(t *testing.T, pool *replicaPool, url string) {
	o := defaultLoad
	o.maxTime = 90 * time.Second // three drains (2s each), exits and starts of race-enabled binaries on two busy cores
	l := startLoad(t, url, o, "before the restarts")
	l.waitEach("warm-up", time.Time{}, 5, 15*time.Second)
	time.Sleep(time.Second)
	var steps strings.Builder
	for i := range pool.replicas {
		l.setPhase(fmt.Sprintf("replica %d draining", i))
		t0 := time.Now()
		pool.term(i)
		t1 := time.Now()
		l.setPhase(fmt.Sprintf("replica %d down, restarting", i))
		pool.start(i)
		t2 := time.Now()
		fmt.Fprintf(&steps, "  replica %d (:%d): SIGTERM → exit %s, exit → /readyz 200 %s\n", i, pool.replicas[i].port,
			t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond))
		if l.exhausted() {
			t.Fatalf("the load ran out of time (%s) during the rolling restart", o.maxTime)
		}
	}
	done := time.Now()
	l.setPhase("after the restarts")
	l.waitEach("after the rolling restart", done, 10, 15*time.Second)
	time.Sleep(time.Second)
	l.halt()
	t.Logf("rolling restart, total %s:\n%s", done.Sub(l.began).Round(time.Millisecond), steps.String())
	stats := l.report(t, "load through a rolling restart")
	if s := stats["all"]; s != nil && s.errs > 0 {
		t.Errorf("%d of %d calls failed during the rolling restart, want none: %v", s.errs, s.calls, s.kinds)
		for _, r := range l.records() {
			if r.err != nil {
				t.Logf("  failed: %s [%s] %s..%s: %v", r.caller, r.phase, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), r.err)
			}
		}
	}
	l.checkSessionsKept(t)
}

// elicitCalls connects a Go SDK client at version (2025-11-25: a session,
// the downstream's elicitation/create comes on the call's response stream
// and the client POSTs its answer; 2026-07-28: sessionless, an
// input_required result and a retry) that answers every elicitation, and
// calls the conformance server's test_elicitation n times through the
// proxy agent; it returns how many finished with the answer, and the
// errors of the others.
func elicitCalls(t *testing.T, url, version string, n int) (int, []string) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-replicas-elicit", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "alice"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s at %s: %v", url, version, err)
	}
	defer cs.Close()
	ok := 0
	var errs []string
	for i := range n {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": fmt.Sprintf("who are you (%d)?", i)}})
		ccancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("call %d after %s: %v", i, time.Since(start).Round(time.Millisecond), err))
		case res.IsError || len(res.Content) == 0:
			errs = append(errs, fmt.Sprintf("call %d after %s: isError %v %v", i, time.Since(start).Round(time.Millisecond), res.IsError, res.Content))
		default:
			if tc, _ := res.Content[0].(*mcp.TextContent); tc != nil && strings.Contains(tc.Text, "action=accept") && strings.Contains(tc.Text, "alice") {
				ok++
			} else {
				errs = append(errs, fmt.Sprintf("call %d: answered %v", i, res.Content[0]))
			}
		}
	}
	return ok, errs
}

// replicaPorts allocates the pool's ports once per test, so the proxy in
// front can name them before any replica runs.
func replicaPorts(t *testing.T, n int) ([]int, []int) {
	ports := freePorts(t, n+replicaCount)
	return ports[:replicaCount], ports[replicaCount:]
}

// TestReplicasNginx: three replicas behind the shipped nginx config,
// round-robin, max_fails=0, no affinity.
func TestReplicasNginx(t *testing.T) {
	tool(t, "nginx")
	pool, other := replicaPorts(t, 3)
	poolProxy, singleProxy, singlePort := other[0], other[1], other[2]
	ngx := startNginxReplicas(t,
		nginxSite{listen: poolProxy, upstream: "pallasgw", ports: pool},
		nginxSite{listen: singleProxy, upstream: "pallasgw_single", ports: []int{singlePort}},
	)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- nginx error.log:\n%s", tail(readFrom(ngx.errLog, 0), 3000))
		}
	})
	poolURL := fmt.Sprintf("http://127.0.0.1:%d/agents/px/mcp", poolProxy)
	singleURL := fmt.Sprintf("http://127.0.0.1:%d/agents/px/mcp", singleProxy)

	t.Run("conformance", func(t *testing.T) {
		down := startConformanceServer(t)
		cfg := replicaConfigFor(t, down)
		gwtest.Start(t, replicaOptions(cfg, "", singlePort)) // the one gateway
		rp := startPool(t, cfg, pool)
		waitFor(t, "nginx to reach the pool", 15*time.Second, ngx.p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", poolProxy)))
		waitFor(t, "nginx to reach the single gateway", 15*time.Second, ngx.p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", singleProxy)))
		for _, rev := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(rev, func(t *testing.T) {
				m := ngx.mark()
				scored := scoredScenarios(t, rev)
				one := conformance(t, singleURL, "--requirements", rev)
				three := conformance(t, poolURL, "--requirements", rev)
				var table strings.Builder
				passOne, passThree := 0, 0
				for _, n := range scored {
					o, ok1 := one[n]
					p, ok3 := three[n]
					if !ok1 || !ok3 {
						t.Errorf("scored scenario %s did not run (single: %v, pool: %v)", n, ok1, ok3)
						continue
					}
					o = judge(t, singleURL, rev, n, o, bridgingFailures)
					p = judge(t, poolURL, rev, n, p, bridgingFailures)
					if o.failed == 0 {
						passOne++
					}
					if p.failed == 0 {
						passThree++
					}
					mark := ""
					if (o.failed == 0) != (p.failed == 0) {
						mark = "  <-- differs"
					}
					fmt.Fprintf(&table, "  %-46s one gateway: %-34s 3 replicas: %s%s\n", n, o, p, mark)
					for _, c := range p.failures {
						fmt.Fprintf(&table, "      3 replicas: %s: %.300s\n", c.ID, c.ErrorMessage)
					}
				}
				t.Logf("conformance %s, --requirements %s through nginx, %d scored scenarios:\n%sPASSED: one gateway %d/%d, 3 replicas %d/%d",
					conformanceVersion, rev, len(scored), table.String(), passOne, len(scored), passThree, len(scored))
				if passThree < passOne {
					t.Errorf("the pool passes %d scored scenarios, one gateway %d: a replica does not serve what another began", passThree, passOne)
				}
				ngx.summarize(t, m, singleProxy, "conformance "+rev+", one gateway")
				ngx.summarize(t, m, poolProxy, "conformance "+rev+", 3 replicas")
			})
		}
		// The suite's elicitation and sampling scenarios at 2025-11-25
		// only check that the request reached the client, not that the
		// call finished with its answer: check that here.
		t.Run("server-to-client answers", func(t *testing.T) {
			m := ngx.mark()
			var table strings.Builder
			for _, target := range []struct{ name, url string }{{"one gateway", singleURL}, {"3 replicas", poolURL}} {
				for _, version := range []string{"2025-11-25", "2026-07-28"} {
					ok, errs := elicitCalls(t, target.url, version, 3)
					fmt.Fprintf(&table, "  %-11s %s: %d/3 test_elicitation calls finished with the answer %v\n", target.name, version, ok, errs)
					if ok != 3 {
						t.Errorf("%s, %s: %d of 3 elicitation calls finished with the caller's answer: %v", target.name, version, ok, errs)
					}
				}
			}
			t.Logf("a downstream's elicitation/create answered by a Go SDK client:\n%s", table.String())
			ngx.summarize(t, m, singleProxy, "server-to-client answers, one gateway")
			ngx.summarize(t, m, poolProxy, "server-to-client answers, 3 replicas")
		})
		rp.logMetrics(t)
	})

	down := startEchoDownstream(t)
	t.Run("kill -9 under load", func(t *testing.T) {
		rp := startPool(t, replicaConfigFor(t, down), pool)
		waitFor(t, "nginx to reach the pool", 15*time.Second, ngx.p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", poolProxy)))
		m := ngx.mark()
		killUnderLoad(t, rp, poolURL, 1, 0)
		ngx.summarize(t, m, poolProxy, "kill -9 under load")
		rp.logMetrics(t)
	})

	t.Run("rolling restart under load", func(t *testing.T) {
		rp := startPool(t, replicaConfigFor(t, down), pool)
		waitFor(t, "nginx to reach the pool", 15*time.Second, ngx.p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", poolProxy)))
		m := ngx.mark()
		rollingRestart(t, rp, poolURL)
		ngx.summarize(t, m, poolProxy, "rolling restart under load")
		rp.logMetrics(t)
	})
}

// caddyReplicas is Caddy on the shipped Caddyfile with the pool's three
// upstreams on its reverse_proxy line.
type caddyReplicas struct{ p *proc }

func startCaddyReplicas(t *testing.T, listen int, ports []int) *caddyReplicas {
	t.Helper()
	caddy := tool(t, "caddy")
	dir := t.TempDir()
	var upstreams []string
	for _, p := range ports {
		upstreams = append(upstreams, fmt.Sprintf("127.0.0.1:%d", p))
	}
	site := substitute(t, "configs/caddy/Caddyfile", readRepoFile(t, "configs/caddy/Caddyfile"),
		`(?m)^agents\.example\.com\s*\{`, fmt.Sprintf("http://:%d {", listen),
		`reverse_proxy\s+127\.0\.0\.1:8200\b`, "reverse_proxy "+strings.Join(upstreams, " "),
		// The health checks and retries are the shipped ones, kept:
		`health_uri\s+/readyz`, "$0",
		`health_interval\s+\S+`, "$0",
		`health_timeout\s+\S+`, "$0",
		`lb_try_duration\s+\S+`, "$0",
		`lb_try_interval\s+\S+`, "$0",
		`fail_duration\s+\S+`, "$0",
		`max_fails\s+\S+`, "$0",
	)
	for _, line := range strings.Split(site, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "health_") || strings.HasPrefix(l, "lb_") ||
			strings.HasPrefix(l, "fail_") || strings.HasPrefix(l, "max_fails") {
			t.Logf("Caddyfile (shipped): %s", l)
		}
	}
	c := &caddyReplicas{p: runCaddy(t, caddy, dir, site)}
	waitFor(t, "caddy to listen", 15*time.Second, c.p, func() error {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", listen), time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	return c
}

// loopbackPortRe finds the loopback addresses in Caddy's errors; those
// not of a replica (Caddy's own ends of connections) are folded into one.
var loopbackPortRe = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// summarize logs Caddy's log lines since off (JSON), grouped by level,
// logger, message and error.
func (c *caddyReplicas) summarize(t *testing.T, off int, title string, upstreams []int) {
	t.Helper()
	out := c.p.out.String()
	if off > len(out) {
		off = len(out)
	}
	groups := map[string]int{}
	for _, line := range strings.Split(out[off:], "\n") {
		var e struct {
			Level, Logger, Msg, Error string
			Host                      string `json:"host"`
			Upstream                  string `json:"upstream"`
			Status                    int    `json:"status"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Level == "" {
			continue
		}
		key := fmt.Sprintf("%s %s: %s", e.Level, e.Logger, e.Msg)
		if e.Error != "" {
			key += ": " + loopbackPortRe.ReplaceAllStringFunc(e.Error, func(a string) string {
				if p, _ := strconv.Atoi(strings.TrimPrefix(a, "127.0.0.1:")); slices.Contains(upstreams, p) {
					return a
				}
				return "127.0.0.1:*"
			})
		}
		if e.Host != "" {
			key += " (host " + e.Host + ")"
		}
		if e.Upstream != "" {
			key += " (upstream " + e.Upstream + ")"
		}
		if e.Status != 0 {
			key += fmt.Sprintf(" (status %d)", e.Status)
		}
		groups[key]++
	}
	t.Logf("caddy, %s: its log lines:\n%s", title, indentCounts(groups))
}

// TestReplicasCaddy: the same pool behind the shipped Caddyfile (health
// checks on /readyz every second, lb_try_duration for refused
// connections): a rolling restart under load fails no call.
func TestReplicasCaddy(t *testing.T) {
	tool(t, "caddy")
	pool, other := replicaPorts(t, 1)
	c := startCaddyReplicas(t, other[0], pool)
	url := fmt.Sprintf("http://127.0.0.1:%d/agents/px/mcp", other[0])
	down := startEchoDownstream(t)
	for _, phase := range []struct {
		name string
		run  func(t *testing.T, rp *replicaPool)
	}{
		// Caddy routes to the killed replica until a health check or a
		// failed attempt (fail_duration) takes it out: a health interval.
		{"kill -9 under load", func(t *testing.T, rp *replicaPool) { killUnderLoad(t, rp, url, 1, time.Second) }},
		{"rolling restart under load", func(t *testing.T, rp *replicaPool) { rollingRestart(t, rp, url) }},
	} {
		t.Run(phase.name, func(t *testing.T) {
			rp := startPool(t, replicaConfigFor(t, down), pool)
			waitFor(t, "caddy to reach the pool", 15*time.Second, c.p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", other[0])))
			// Every upstream healthy in Caddy's eyes before the load: a
			// few health intervals.
			time.Sleep(2 * time.Second)
			off := len(c.p.out.String())
			phase.run(t, rp)
			c.summarize(t, off, phase.name, pool)
			rp.logMetrics(t)
		})
	}
}
