package mcpclient

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// everythingEnv names the path of @modelcontextprotocol/server-everything's
// dist/index.js; the interoperability test runs only when it is set (and
// node is installed), as .ci/run does.
const everythingEnv = "PALLASGW_EVERYTHING_SERVER"

// startEverything runs server-everything's Streamable HTTP server on addr
// (host:port) and returns a function that stops it.
func startEverything(t *testing.T, script, addr string) func() {
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("node", script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting server-everything: %v", err)
	}
	var stopped atomic.Bool
	stop := func() {
		if stopped.CompareAndSwap(false, true) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestEverythingInterop checks the pinned legacy protocol against the
// TypeScript SDK's reference server: listing, calls, progress, prompts,
// resources, the probe, and a reconnect after the server restarts (it
// answers an unknown session with 400, not 404).
func TestEverythingInterop(t *testing.T) {
	script := os.Getenv(everythingEnv)
	if script == "" {
		t.Skipf("%s not set: install @modelcontextprotocol/server-everything and point it at dist/index.js", everythingEnv)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(script); err != nil || !filepath.IsAbs(script) {
		// node would exit at once and the probe would wait for nothing.
		t.Fatalf("%s=%q: want the absolute path of an existing dist/index.js (%v)", everythingEnv, script, err)
	}
	mcpURL := freeURL(t)
	u, _ := url.Parse(mcpURL)
	stop := startEverything(t, script, u.Host)
	log, logs := observed(zap.NewAtomicLevelAt(zap.InfoLevel))
	m := newManager(t, Options{Logger: log}, ServerSpec{Name: "everything", URL: mcpURL, Timeout: 20 * time.Second})
	ctx := testCtx(t)
	waitProbe(t, m)

	tools, err := m.Tools(ctx, "everything", nil)
	if err != nil || !strings.Contains(toolNames(tools), "echo") {
		t.Fatalf("tools = %s, err %v", toolNames(tools), err)
	}
	res, err := m.CallTool(ctx, "everything", "echo", map[string]any{"message": "hi"}, nil, nil, CallOptions{})
	if err != nil || !strings.Contains(text(t, res), "hi") {
		t.Fatalf("echo: %v %v", res, err)
	}
	var steps atomic.Int32
	_, err = m.CallTool(ctx, "everything", "trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, nil,
		func(_ float64, total *float64, _ string) {
			if total != nil && *total == 3 {
				steps.Add(1)
			}
		}, CallOptions{})
	if err != nil || steps.Load() != 3 {
		t.Fatalf("long running operation: %d progress notifications, err %v", steps.Load(), err)
	}
	if _, err := m.ListPrompts(ctx, "everything", nil); err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	if _, err := m.ListResources(ctx, "everything", nil); err != nil {
		t.Fatalf("resources/list: %v", err)
	}

	stop()
	startEverything(t, script, u.Host)
	waitProbe(t, m)
	if _, err := m.CallTool(ctx, "everything", "echo", map[string]any{"message": "again"}, nil, nil, CallOptions{}); err != nil {
		t.Fatalf("echo after restart: %v", err)
	}
	if logs.FilterMessage("downstream session lost, reconnecting").Len() != 1 {
		t.Fatal("the call after the restart did not reconnect exactly once")
	}
}

func waitProbe(t *testing.T, m *Manager) {
	t.Helper()
	eventually(t, "server-everything to answer a probe", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return m.Probe(ctx, "everything", nil) == nil
	})
}
