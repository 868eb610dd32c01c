package agents

import (
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// get_health is degraded while the p95 of the agent's recent model calls
// passes health.slow_p95, and says by how much; too few calls, fast calls
// or slow_p95 0 say nothing; only the last window calls count.
func TestLatencyFinding(t *testing.T) {
	secs := func(fs ...float64) []time.Duration {
		var out []time.Duration
		for _, f := range fs {
			out = append(out, time.Duration(f*float64(time.Second)))
		}
		return out
	}
	repeat := func(n int, f float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f
		}
		return out
	}
	cases := []struct {
		name   string
		slow   time.Duration
		window int
		calls  []time.Duration
		want   string // "" no finding
	}{
		{"slow", 10 * time.Second, 20, secs(append(repeat(18, 1), 12.3, 12.3)...), "model calls are slow: p95 12.3s over the last 20 calls (health.slow_p95 10s)"},
		{"one slow call in twenty", 10 * time.Second, 20, secs(append(repeat(19, 1), 60)...), ""},
		{"fast", 10 * time.Second, 20, secs(repeat(20, 9.9)...), ""},
		{"too few calls", 10 * time.Second, 20, secs(repeat(config.MinLatencySamples-1, 60)...), ""},
		{"off", 0, 20, secs(repeat(20, 60)...), ""},
		{"old slow calls left the window", 10 * time.Second, 5, secs(append(repeat(5, 60), repeat(5, 1)...)...), ""},
		{"recent slow calls in the window", 10 * time.Second, 5, secs(append(repeat(5, 1), repeat(5, 15)...)...), "p95 15.0s over the last 5 calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{Config: &config.Agent{Health: config.AgentHealth{SlowP95: tc.slow, Window: tc.window}}, latency: newLatencyWindow(tc.window)}
			for _, d := range tc.calls {
				a.latency.add(d)
			}
			f := a.latencyFinding()
			switch {
			case tc.want == "" && f != nil:
				t.Fatalf("finding %+v, want none", *f)
			case tc.want != "" && (f == nil || f.status != statusDegraded || !strings.Contains(f.msg, tc.want)):
				t.Fatalf("finding %+v, want degraded %q", f, tc.want)
			}
		})
	}
}
