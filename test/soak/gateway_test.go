package soak

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// gateway is the running binary.
type gateway struct {
	*gwtest.Gateway
}

// buildGateway builds the race-enabled binary here, not in TestMain: the
// soak runs only when asked, and the build is not worth it otherwise.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin, err := gwtest.Build(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startGateway runs bin on cfg, logging at warn; the stop waits 30 s for
// the drain and fails the test on a data race or a panic in the log.
func startGateway(t *testing.T, bin string, port int, cfg string) *gateway {
	t.Helper()
	return &gateway{gwtest.Start(t, gwtest.Options{Binary: bin, Config: cfg, Port: port, LogLevel: "warn",
		StopTimeout: 30 * time.Second, LogChecks: []string{"DATA RACE", "panic"}})}
}

// checkAlive requires the process to be running and ready.
func (g *gateway) checkAlive(t *testing.T) {
	t.Helper()
	select {
	case <-g.Exited():
		t.Fatalf("the gateway exited during the soak:\n%s", tail(g.Logs(), 200))
	default:
	}
	resp, err := http.Get(g.Base + "/readyz")
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
	v, _ := g.Metric(series)
	return v
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

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
