package gwtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options says how Start runs a gateway. The zero value runs the binary
// Main built on a free port, logging at debug into memory.
type Options struct {
	// Binary is the pallasgw binary to run; default: the one Main built.
	Binary string
	// Config is the config's text, written to a file of its own temporary
	// directory with {{PORT}} replaced by Port.
	Config string
	// ConfigPath, when set instead of Config, is an existing config file,
	// run as is (its listen port must be Port).
	ConfigPath string
	// Port is the main listen port; default: a free one (FreePorts).
	Port int
	// Env is added to the test's environment.
	Env []string
	// LogLevel is --log-level; default "debug".
	LogLevel string
	// LogFile sends the log to a file (in a directory of its own: the
	// gateway watches the config's) instead of memory; default false.
	LogFile bool
	// TailBytes is how much of the log's end failure messages show;
	// default 0, the whole log.
	TailBytes int
	// ReadyTimeout bounds the wait for /readyz; default 30 s.
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait after SIGTERM before the kill; default 20 s.
	StopTimeout time.Duration
	// ProcessGroup runs the gateway in a process group of its own and
	// signals the whole group, so that its stdio servers stop with it;
	// default false.
	ProcessGroup bool
	// LogOnFailure logs the log's tail when the test has failed, once the
	// gateway is stopped; default false.
	LogOnFailure bool
	// LogChecks are strings whose presence in the log after the stop fails
	// the test; default {"DATA RACE"}.
	LogChecks []string
	// Args are more flags of serve (--agent NAME); default none.
	Args []string
}

// Gateway is one running `pallasgw serve` process, stopped when the test
// ends.
type Gateway struct {
	Base       string // http://127.0.0.1:Port
	Port       int
	ConfigPath string

	t        testing.TB
	o        Options
	cmd      *exec.Cmd
	logs     *SyncBuffer // nil when the log is a file
	logPath  string
	exited   chan struct{}
	stopOnce sync.Once
}

// Start runs `pallasgw serve` as o says and returns once /readyz answers
// 200; it fails the test when the gateway exits first or is not ready in
// time. The gateway is stopped (Stop) when the test ends.
func Start(t testing.TB, o Options) *Gateway {
	t.Helper()
	o = o.withDefaults(t)
	g := &Gateway{Base: fmt.Sprintf("http://127.0.0.1:%d", o.Port), Port: o.Port, ConfigPath: o.ConfigPath,
		t: t, o: o, exited: make(chan struct{})}
	if o.ConfigPath == "" {
		g.ConfigPath = filepath.Join(t.TempDir(), "pallasgw.yaml")
		if err := g.WriteConfig(o.Config); err != nil {
			t.Fatal(err)
		}
	}
	g.cmd = exec.Command(o.Binary, append([]string{"serve", "--config", g.ConfigPath, "--log-level", o.LogLevel}, o.Args...)...)
	g.cmd.Env = append(os.Environ(), o.Env...)
	if o.ProcessGroup {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	closeLog := func() {}
	if o.LogFile {
		g.logPath = filepath.Join(t.TempDir(), "pallasgw.log")
		f, err := os.Create(g.logPath)
		if err != nil {
			t.Fatal(err)
		}
		g.cmd.Stdout, g.cmd.Stderr, closeLog = f, f, func() { f.Close() }
	} else {
		g.logs = &SyncBuffer{}
		g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	}
	if err := g.cmd.Start(); err != nil {
		closeLog()
		t.Fatalf("starting the gateway: %v", err)
	}
	go func() { g.cmd.Wait(); closeLog(); close(g.exited) }()
	t.Cleanup(g.Stop)
	g.waitReady()
	return g
}

func (o Options) withDefaults(t testing.TB) Options {
	t.Helper()
	if o.Binary == "" {
		o.Binary = built
	}
	if o.Binary == "" {
		t.Fatal("no gateway binary: the package's TestMain builds it (gwtest.Main) or Options.Binary names it")
	}
	if o.Port == 0 {
		o.Port = FreePorts(t, 1)[0]
	}
	if o.LogLevel == "" {
		o.LogLevel = "debug"
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	if o.LogChecks == nil {
		o.LogChecks = []string{"DATA RACE"}
	}
	return o
}

// waitReady polls /readyz until it answers 200, the process exits or
// ReadyTimeout passes.
func (g *Gateway) waitReady() {
	g.t.Helper()
	deadline := time.Now().Add(g.o.ReadyTimeout)
	for {
		select {
		case <-g.exited:
			g.t.Fatalf("gateway exited early (%s):\n%s", g.cmd.ProcessState, g.Tail())
		default:
		}
		err := g.ready(deadline)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("gateway not ready in %s (%v):\n%s", g.o.ReadyTimeout, err, g.Tail())
		}
		time.Sleep(20 * time.Millisecond) // the polling interval
	}
}

// ready is one GET /readyz, bounded by the readiness deadline.
func (g *Gateway) ready(deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz %d", resp.StatusCode)
	}
	return nil
}

// Exited is closed when the process has ended.
func (g *Gateway) Exited() <-chan struct{} { return g.exited }

// ExitCode is the process's exit code once Exited is closed (-1 when a
// signal ended it).
func (g *Gateway) ExitCode() int {
	<-g.exited
	return g.cmd.ProcessState.ExitCode()
}

// Pid is the gateway process's id.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// Signal sends sig to the gateway (to its process group with ProcessGroup).
func (g *Gateway) Signal(sig syscall.Signal) error {
	if g.o.ProcessGroup {
		return syscall.Kill(-g.cmd.Process.Pid, sig)
	}
	return g.cmd.Process.Signal(sig)
}

// Stop ends the gateway: SIGTERM, then SIGKILL after StopTimeout. It fails
// the test when the gateway needed the kill or exited with a non-zero code,
// and when the log has one of LogChecks. Only the first call does anything;
// it is the test's cleanup, and may be called earlier (to read the whole
// log, which the gateway writes out as it stops).
func (g *Gateway) Stop() { g.stopOnce.Do(g.stop) }

func (g *Gateway) stop() {
	select {
	case <-g.exited: // ended by itself, or by the test: the test's concern
	default:
		g.Signal(syscall.SIGTERM)
		// A test has no load balancer to drain from: SIGTERM again, which
		// stops the gateway at once once it has begun its shutdown.
		again := time.NewTicker(100 * time.Millisecond)
		defer again.Stop()
		deadline := time.After(g.o.StopTimeout)
		for stopped := false; !stopped; {
			select {
			case <-again.C:
				g.Signal(syscall.SIGTERM)
			case <-g.exited:
				stopped = true
				if !g.cmd.ProcessState.Success() {
					g.t.Errorf("gateway ended with %s on SIGTERM:\n%s", g.cmd.ProcessState, g.Tail())
				}
			case <-deadline:
				stopped = true
				g.Signal(syscall.SIGKILL)
				<-g.exited
				g.t.Errorf("gateway did not stop on SIGTERM in %s:\n%s", g.o.StopTimeout, g.Tail())
			}
		}
	}
	g.checkLog()
	if g.o.LogOnFailure && g.t.Failed() {
		g.t.Logf("--- pallasgw output:\n%s", g.Tail())
	}
}

// checkLog fails the test for each of LogChecks in the log, showing the
// log around it and saving the whole log in a file that outlives the test.
func (g *Gateway) checkLog() {
	logs := g.Logs()
	for _, bad := range g.o.LogChecks {
		i := strings.Index(logs, bad)
		if i < 0 {
			continue
		}
		path := "(not saved)"
		if f, err := os.CreateTemp("", "pallasgw-*.log"); err == nil {
			f.WriteString(logs)
			f.Close()
			path = f.Name()
		}
		g.t.Errorf("%q in the gateway's log (whole log in %s):\n%s", bad, path, logs[max(0, i-2000):min(len(logs), i+6000)])
	}
}

// Logs is the log so far. The gateway buffers its log and writes it out at
// least once a second, and all of it when it stops.
func (g *Gateway) Logs() string {
	if g.logs != nil {
		return g.logs.String()
	}
	b, _ := os.ReadFile(g.logPath)
	return string(b)
}

// Tail is the end of the log (TailBytes of it), for failure messages.
func (g *Gateway) Tail() string {
	s := g.Logs()
	if n := g.o.TailBytes; n > 0 && len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// expand replaces {{PORT}} in a config by the main port.
func (g *Gateway) expand(cfg string) []byte {
	return []byte(strings.ReplaceAll(cfg, "{{PORT}}", strconv.Itoa(g.Port)))
}

// WriteConfig replaces the config file in place (as `cat > file` would),
// {{PORT}} replaced by the main port.
func (g *Gateway) WriteConfig(cfg string) error {
	return os.WriteFile(g.ConfigPath, g.expand(cfg), 0o600)
}

// RenameConfig replaces the config file the way editors do: it writes a
// temporary file beside it and renames it over the original.
func (g *Gateway) RenameConfig(cfg string) error {
	tmp := filepath.Join(filepath.Dir(g.ConfigPath), "."+filepath.Base(g.ConfigPath)+".swp")
	if err := os.WriteFile(tmp, g.expand(cfg), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, g.ConfigPath)
}
