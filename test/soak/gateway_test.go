package soak

import (
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

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// gateway is the running binary.
type gateway struct {
	cmd     *exec.Cmd
	base    string
	port    int
	cfgPath string
	logs    *lockedBuffer
	exited  chan struct{}
}

func buildGateway(t *testing.T) string {
	t.Helper()
	bin, err := gwtest.Build("../..", t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func startGateway(t *testing.T, bin string, port int, cfg string) *gateway {
	t.Helper()
	g := &gateway{base: fmt.Sprintf("http://127.0.0.1:%d", port), port: port, cfgPath: filepath.Join(t.TempDir(), "pallasgw.yaml"),
		logs: &lockedBuffer{}, exited: make(chan struct{})}
	if err := os.WriteFile(g.cfgPath, []byte(strings.ReplaceAll(cfg, "{{PORT}}", fmt.Sprint(port))), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cmd = exec.Command(bin, "serve", "--config", g.cfgPath, "--log-level", "warn")
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() { g.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(g.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited early:\n%s", g.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready:\n%s", g.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *gateway) stop(t *testing.T) {
	select {
	case <-g.exited:
	default:
		g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(30 * time.Second):
			g.cmd.Process.Kill()
			<-g.exited
			t.Errorf("gateway did not stop on SIGTERM")
		}
	}
	logs := g.logs.String()
	for _, bad := range []string{"DATA RACE", "panic"} {
		i := strings.Index(logs, bad)
		if i < 0 {
			continue
		}
		path := "(not saved)"
		if f, err := os.CreateTemp("", "pallasgw-soak-*.log"); err == nil {
			f.WriteString(logs)
			f.Close()
			path = f.Name()
		}
		t.Errorf("%q in the gateway's log (whole log in %s):\n%s", bad, path, logs[max(0, i-2000):min(len(logs), i+6000)])
	}
}

// checkAlive requires the process to be running and ready.
func (g *gateway) checkAlive(t *testing.T) {
	t.Helper()
	select {
	case <-g.exited:
		t.Fatalf("the gateway exited during the soak:\n%s", tail(g.logs.String(), 200))
	default:
	}
	resp, err := http.Get(g.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz %d after the soak", resp.StatusCode)
	}
}

// metricValue reads one series (labels exactly as exposed); 0 when absent.
func (g *gateway) metricValue(t *testing.T, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(get(g.base+"/metrics"), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// get returns the body of a GET ("" on failure).
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// dumpGoroutines logs the gateway's goroutines (pprof, loopback admin).
func dumpGoroutines(t *testing.T, base string) {
	t.Logf("gateway goroutines:\n%s", tail(get(base+"/debug/pprof/goroutine?debug=1"), 400))
}

var freePorts = gwtest.FreePorts

type lockedBuffer = gwtest.SyncBuffer

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
