package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func stdioSpec() ServerSpec {
	return ServerSpec{
		Name: "files", Transport: TransportStdio, Command: stdioServerBin,
		Env: map[string]string{"PGW_TEST_VAR": "from-spec"},
	}
}

func pidOf(t *testing.T, m *Manager, h map[string][]string) int {
	t.Helper()
	res, err := m.CallTool(testCtx(t), "files", "pid", nil, h, nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(text(t, res))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func hasLog(logs *observer.ObservedLogs, msg, lineContains string) bool {
	for _, e := range logs.FilterMessage(msg).All() {
		f := e.ContextMap()
		if f[fieldServer] == "files" && f[fieldComponent] == "downstream" && strings.Contains(f[fieldLine].(string), lineContains) {
			return true
		}
	}
	return false
}

func TestStdioOneProcessAndStderr(t *testing.T) {
	log, logs := observed(zap.NewAtomicLevelAt(zap.InfoLevel))
	m := newManager(t, Options{Logger: log}, stdioSpec())
	ctx := testCtx(t)

	tools, err := m.Tools(ctx, "files", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(toolNames(tools), "echo") {
		t.Fatalf("tools = %s", toolNames(tools))
	}
	a := pidOf(t, m, hdr("X-Tenant", "a"))
	if b := pidOf(t, m, hdr("X-Tenant", "b")); a != b {
		t.Fatalf("two processes (%d, %d) for two header sets, want one", a, b)
	}
	eventually(t, "the stderr line in the log", func() bool {
		return hasLog(logs, "downstream stderr", "stdioserver ready pid="+strconv.Itoa(a))
	})
	if err := m.Probe(ctx, "files", nil); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	_ = m.Close()
	if err := syscall.Kill(a, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still exists after Close (kill 0: %v)", a, err)
	}
}

func TestStdioEnvironment(t *testing.T) {
	t.Setenv("PGW_PARENT_ONLY", "must-not-leak")
	m := newManager(t, Options{}, stdioSpec())
	for _, tc := range []struct{ name, want string }{
		{"PGW_TEST_VAR", "from-spec"},
		{"PGW_PARENT_ONLY", "<unset>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.CallTool(testCtx(t), "files", "env", map[string]any{"name": tc.name}, nil, nil, CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); got != tc.want {
				t.Fatalf("%s = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestStdioCrashRestarts(t *testing.T) {
	m := newManager(t, Options{}, stdioSpec())
	first := pidOf(t, m, nil)

	_, err := m.CallTool(testCtx(t), "files", "crash", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("crash: err = %v, want ErrUnavailable", err)
	}
	if want := `(the process ended: exit status 3; its last stderr line: "crashing on request")`; !strings.Contains(err.Error(), want) {
		t.Errorf("crash: err = %v, want it to say how the process ended: %s", err, want)
	}
	second := pidOf(t, m, nil)
	if second == first {
		t.Fatal("the crashed process was not replaced")
	}

	// A process killed between calls is noticed (its stderr ends) and
	// restarted on the next use.
	s := m.servers["files"].pool[""]
	if err := s.lock(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	proc := s.proc
	s.unlock()
	if err := syscall.Kill(second, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the exit to be noticed", proc.exited)
	if third := pidOf(t, m, nil); third == second {
		t.Fatal("the killed process was not replaced")
	}
}

func TestStdioCancel(t *testing.T) {
	log, logs := observed(zap.NewAtomicLevelAt(zap.InfoLevel))
	m := newManager(t, Options{Logger: log}, stdioSpec())
	pidOf(t, m, nil) // started
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "files", "block", nil, nil, nil, CallOptions{})
		errc <- err
	}()
	eventually(t, "the call to start", func() bool { return hasLog(logs, "downstream stderr", "block started") })
	cancel()
	if got := Outcome(receive(t, "the call to return", errc)); got != "canceled" {
		t.Fatalf("Outcome = %q, want canceled", got)
	}
	eventually(t, "the downstream to see notifications/cancelled", func() bool {
		return hasLog(logs, "downstream stderr", "block canceled")
	})
}

func TestStdioBadCommand(t *testing.T) {
	m := newManager(t, Options{}, ServerSpec{Name: "files", Transport: TransportStdio, Command: "/nonexistent/mcp-server"})
	_, err := m.CallTool(testCtx(t), "files", "echo", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if err := m.Probe(testCtx(t), "files", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Probe err = %v, want ErrUnavailable", err)
	}
}

// A stdio server's line longer than Options.MaxMessageBytes fails the call
// saying so, after at most the bound was read of it; the process is
// replaced and the next call works.
func TestStdioLineIsBounded(t *testing.T) {
	m := newManager(t, Options{MaxMessageBytes: testLimit}, stdioSpec())
	before := pidOf(t, m, nil)
	_, err := m.CallTool(testCtx(t), "files", "echo", map[string]any{"text": strings.Repeat("x", 4*testLimit)}, nil, nil, CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes, the limit of one message") {
		t.Fatalf("error %v, want the line refused as larger than the bound", err)
	}
	res, err := m.CallTool(testCtx(t), "files", "echo", map[string]any{"text": "small"}, nil, nil, CallOptions{})
	if err != nil || text(t, res) != "echo:small" {
		t.Fatalf("the call after: %v", err)
	}
	if after := pidOf(t, m, nil); after == before {
		t.Errorf("the process that sent the long line still serves (pid %d)", after)
	}
}

// A stdio server that exits at once: the call's and the probe's errors say
// how it ended, with its last stderr line. The values the spec names in
// Redact (its config's ${VAR}s; here a token in its args) stay out of them
// and of the log, stderr lines included.
func TestStdioExitStatusAndRedactedArgs(t *testing.T) {
	log, logs := observed(zap.NewAtomicLevelAt(zap.DebugLevel))
	m := newManager(t, Options{Logger: log}, ServerSpec{
		Name: "files", Transport: TransportStdio, Command: "/bin/sh",
		Args:   []string{"-c", `echo "argv: $*" >&2; exit 7`, "sh", "--token", "tok=ARGSECRET9"},
		Redact: []string{"ARGSECRET9"},
	})
	ctx := testCtx(t)
	_, callErr := m.CallTool(ctx, "files", "echo", nil, nil, nil, CallOptions{})
	probeErr := m.Probe(ctx, "files", nil)
	for name, err := range map[string]error{"call": callErr, "probe": probeErr} {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: err = %v, want ErrUnavailable", name, err)
		}
		want := `(the process ended: exit status 7; its last stderr line: "argv: --token tok=<redacted>")`
		if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "ARGSECRET9") {
			t.Errorf("%s: err = %s\nwant it to end %s", name, msg, want)
		}
	}
	if !hasLog(logs, "downstream stderr", "argv: --token tok="+redactedValue) {
		t.Error("no stderr line with the token redacted")
	}
	for _, e := range logs.All() {
		if line := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(line, "ARGSECRET9") {
			t.Errorf("log line carries the args' secret: %s", line)
		}
	}
}
