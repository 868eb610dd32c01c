// Package integration starts the real pallasgw binary on real ports and
// drives it with independent MCP clients (the official Go SDK).
package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pallasgw-it")
	if err != nil {
		panic(err)
	}
	if binary, err = gwtest.Build("../..", dir, true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var freePorts = gwtest.FreePorts

type syncBuffer = gwtest.SyncBuffer

// gw is one running gateway process.
type gw struct {
	t       testing.TB
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:port
	cfgPath string
	logs    *syncBuffer
	exited  chan struct{}
}

// startGateway writes cfg (with {{PORT}} replaced by the main port) and runs
// `pallasgw serve` on it until the test ends.
func startGateway(t testing.TB, cfg string, env ...string) *gw {
	t.Helper()
	port := freePorts(t, 1)[0]
	dir := t.TempDir()
	path := filepath.Join(dir, "pallasgw.yaml")
	cfg = strings.ReplaceAll(cfg, "{{PORT}}", fmt.Sprint(port))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return startGatewayAt(t, path, port, env...)
}

// startGatewayAt runs `pallasgw serve` on an existing config file whose
// listen port is port.
func startGatewayAt(t testing.TB, path string, port int, env ...string) *gw {
	t.Helper()
	g := &gw{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port), cfgPath: path, logs: &syncBuffer{}, exited: make(chan struct{})}
	g.cmd = exec.Command(binary, "serve", "--config", path, "--log-level", "debug")
	g.cmd.Env = append(os.Environ(), env...)
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.cmd.Wait(); close(g.exited) }()
	t.Cleanup(g.stop)
	g.waitReady()
	return g
}

func (g *gw) waitReady() {
	g.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			g.t.Fatalf("gateway exited early:\n%s", g.logs.String())
		default:
		}
		resp, err := http.Get(g.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("gateway not ready in time:\n%s", g.logs.String())
}

func (g *gw) stop() {
	select {
	case <-g.exited:
		return
	default:
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(20 * time.Second):
		g.cmd.Process.Kill()
		<-g.exited
		g.t.Errorf("gateway did not stop on SIGTERM:\n%s", g.logs.String())
	}
	if strings.Contains(g.logs.String(), "DATA RACE") {
		g.t.Errorf("race detected in the gateway:\n%s", g.logs.String())
	}
}

// connect opens a Go SDK client session to url; version "" is the SDK's
// default (sessionless 2026-07-28), "2025-11-25" the session-based style.
func connect(t testing.TB, url, version string, onProgress func(*mcp.ProgressNotificationClientRequest)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func httpGet(t testing.TB, url string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
		if strings.EqualFold(k, "Host") {
			req.Host = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func textOf(t testing.TB, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want text content, got %T", r.Content[0])
	}
	return tc.Text
}
