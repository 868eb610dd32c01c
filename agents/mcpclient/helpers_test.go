package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/metrics"
)

// stdioServerBin is the test stdio server, built once by TestMain.
var stdioServerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpclient-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stdioServerBin = filepath.Join(dir, "stdioserver")
	build := exec.Command(goTool(), "build", "-o", stdioServerBin, "./testdata/stdioserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building testdata/stdioserver:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// waitLimit is how long a test waits for what must happen: until shortly
// before the test binary's own deadline (go test -timeout), not a guess of
// how fast the machine is, so that a loaded machine makes a test slower,
// never failing; a hang still fails, named.
func waitLimit(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-10 * time.Second)
	}
	return time.Now().Add(time.Hour)
}

// eventually polls cond until it holds (waitLimit).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := waitLimit(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// receive waits for a value on ch (waitLimit).
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	limit := time.NewTimer(time.Until(waitLimit(t)))
	defer limit.Stop()
	select {
	case v := <-ch:
		return v
	case <-limit.C:
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// noLeak fails t unless the goroutine count falls back to base.
func noLeak(t *testing.T, base int) {
	t.Helper()
	deadline := waitLimit(t)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("%d goroutines left, want <= %d:\n%s", runtime.NumGoroutine(), base, buf.String())
		}
		<-tick.C
	}
}

// testCtx is a call's context: it ends at waitLimit, not at a wall-clock
// guess (a 64 MiB message under -race on a loaded machine took over 30 s).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), waitLimit(t))
	t.Cleanup(cancel)
	return ctx
}

func newManager(t *testing.T, opts Options, specs ...ServerSpec) *Manager {
	m := NewManager(specs, opts)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func observed(level zap.AtomicLevel) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return zap.New(core), logs
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func newMetrics() *metrics.Metrics { return metrics.New("test") }

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// freeURL returns an http URL on 127.0.0.1 where nothing listens.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/mcp"
}

// seen is one request the downstream received.
type seen struct {
	method string // HTTP method
	rpc    string // JSON-RPC method; "" for GET and DELETE
	header http.Header
}

type headerKey struct{}

// downstream is an in-process mcp-go Streamable HTTP server that records
// what it receives. Its tools: echo, whoami (the X-Tenant header seen by the
// handler), wait (blocks until release or cancellation), progress (three
// progress notifications carrying its id, then like wait) and log (a logging
// notification, then like wait).
type downstream struct {
	ts       *httptest.Server
	stateful bool
	mcp      atomic.Pointer[server.MCPServer]
	h        atomic.Pointer[server.StreamableHTTPServer]

	mu   sync.Mutex
	seen []seen

	release  chan struct{} // closed to let wait and progress return
	started  chan string   // ids of wait/progress calls that started
	canceled chan string   // ids of wait/progress calls whose context ended
	reject   atomic.Bool   // answer every tools/call with 404
}

func newDownstream(t *testing.T, stateful bool) *downstream {
	d := &downstream{
		stateful: stateful,
		release:  make(chan struct{}),
		started:  make(chan string, 64),
		canceled: make(chan string, 64),
	}
	d.restart(false)
	d.ts = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *downstream) url() string { return d.ts.URL + "/mcp" }

func (d *downstream) spec(name string) ServerSpec {
	return ServerSpec{Name: name, Transport: TransportHTTP, URL: d.url()}
}

// restart replaces the MCP server with a fresh one that knows no session,
// as a restarted process would; dropConns also closes every connection.
func (d *downstream) restart(dropConns bool) {
	s := d.newMCPServer()
	opts := []server.StreamableHTTPOption{server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Clone())
	})}
	if d.stateful {
		opts = append(opts, server.WithStateful(true))
	}
	d.mcp.Store(s)
	d.h.Store(server.NewStreamableHTTPServer(s, opts...))
	if dropConns {
		d.ts.CloseClientConnections()
	}
}

func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	d.mu.Lock()
	d.seen = append(d.seen, seen{method: r.Method, rpc: msg.Method, header: r.Header.Clone()})
	d.mu.Unlock()
	if d.reject.Load() && msg.Method == string(mcp.MethodToolsCall) {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	d.h.Load().ServeHTTP(w, r)
}

// requests returns the recorded requests with that HTTP method and RPC
// method ("" matches any RPC method).
func (d *downstream) requests(method, rpc string) []seen {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []seen
	for _, s := range d.seen {
		if s.method == method && (rpc == "" || s.rpc == rpc) {
			out = append(out, s)
		}
	}
	return out
}

func (d *downstream) count(method, rpc string) int { return len(d.requests(method, rpc)) }

// tenants returns the X-Tenant values of the matching requests.
func (d *downstream) tenants(method, rpc string) []string {
	var out []string
	for _, s := range d.requests(method, rpc) {
		out = append(out, s.header.Get("X-Tenant"))
	}
	return out
}

func (d *downstream) newMCPServer() *server.MCPServer {
	s := server.NewMCPServer("downstream", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo:" + req.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h, _ := ctx.Value(headerKey{}).(http.Header)
		return mcp.NewToolResultText(h.Get("X-Tenant")), nil
	})
	s.AddTool(mcp.NewTool("wait", mcp.WithString("id")), d.wait)
	s.AddTool(mcp.NewTool("log"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{
			"level": "warning", "logger": "tool", "data": "hello",
		})
		return d.wait(ctx, mcp.CallToolRequest{})
	})
	s.AddTool(mcp.NewTool("progress", mcp.WithString("id")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := req.GetString("id", "")
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			for i := 1; i <= 3; i++ {
				_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": req.Params.Meta.ProgressToken, "progress": i, "message": id,
				})
			}
		}
		return d.wait(ctx, req)
	})
	return s
}

func (d *downstream) wait(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := req.GetString("id", "")
	d.started <- id
	select {
	case <-d.release:
		return mcp.NewToolResultText(id), nil
	case <-ctx.Done():
		d.canceled <- id
		return nil, ctx.Err()
	}
}

func toolNames(tools []mcp.Tool) string {
	names := make([]string, 0, len(tools))
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	return strings.Join(names, ",")
}

// sessionCount returns the number of pooled sessions of srv.
func (srv *remote) sessionCount() int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.pool)
}
