package gwtest

import (
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m, false) }

func TestParseMetrics(t *testing.T) {
	const text = `# HELP c A counter.
# TYPE c counter
c{a="x",b="y"} 3
c{a="q\"uote\\d",b="line\nbreak"} 1
# TYPE g gauge
g 2.5
# TYPE u untyped
u 7
# TYPE h histogram
h_bucket{k="v",le="0.5"} 1
h_bucket{k="v",le="+Inf"} 4
h_sum{k="v"} 9.5
h_count{k="v"} 4
# TYPE s summary
s{quantile="0.99"} 0.25
s_sum 10
s_count 40
`
	got, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		series string
		want   float64
	}{
		{`c{a="x",b="y"}`, 3},
		{`c{a="q\"uote\\d",b="line\nbreak"}`, 1},
		{`g`, 2.5},
		{`u`, 7},
		{`h_bucket{k="v",le="0.5"}`, 1},
		{`h_bucket{k="v",le="+Inf"}`, 4},
		{`h_sum{k="v"}`, 9.5},
		{`h_count{k="v"}`, 4},
		{`s{quantile="0.99"}`, 0.25},
		{`s_sum`, 10},
		{`s_count`, 40},
	} {
		t.Run(c.series, func(t *testing.T) {
			if v, ok := got[c.series]; !ok || v != c.want {
				t.Errorf("%s = %v (present %v), want %v; have %v", c.series, v, ok, c.want, got)
			}
		})
	}
	if _, err := ParseMetrics(strings.NewReader("not the text format {\n")); err == nil {
		t.Error("garbage parsed without an error")
	}
}

const cfg = `
name: gwtest
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 20ms, poll_interval: 0}
agents:
  echo: {description: "%s"}
`

// TestGateway starts the real binary, reloads it through a renamed config
// and stops it, reading its log and metrics on the way.
func TestGateway(t *testing.T) {
	g := Start(t, Options{Config: strings.Replace(cfg, "%s", "v1", 1)})
	if v, ok := g.Metric("pallasgw_config_last_reload_successful"); !ok || v != 1 {
		t.Fatalf("pallasgw_config_last_reload_successful = %v (present %v), want 1", v, ok)
	}
	before, _ := g.Metric(`pallasgw_config_reloads_total{result="success"}`)
	if err := g.RenameConfig(strings.Replace(cfg, "%s", "v2", 1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, _ := g.Metric(`pallasgw_config_reloads_total{result="success"}`); v > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful reload in 10s:\n%s", g.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.Stop()
	select {
	case <-g.Exited():
	default:
		t.Fatal("Stop returned with the gateway running")
	}
	if code := g.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if g.Logs() == "" {
		t.Error("no log")
	}
}

// TestGatewayLogFile runs one with its log in a file and a port of our own.
func TestGatewayLogFile(t *testing.T) {
	port := FreePorts(t, 1)[0]
	g := Start(t, Options{Config: strings.Replace(cfg, "%s", "f", 1), Port: port, LogFile: true, LogLevel: "info", TailBytes: 100})
	if g.Port != port || g.Base != "http://127.0.0.1:"+strings.TrimPrefix(g.Base, "http://127.0.0.1:") {
		t.Fatalf("port %d, base %s", g.Port, g.Base)
	}
	g.Stop()
	if !strings.Contains(g.Logs(), `"level":"info"`) {
		t.Errorf("the log file has no info line:\n%s", g.Logs())
	}
	if n := len(g.Tail()); n > 103 {
		t.Errorf("tail of %d bytes, want at most 100 and the dots", n)
	}
}

// TestGatewayProcessGroup runs one in its own process group (test/e2e's
// way) and stops it through the group.
func TestGatewayProcessGroup(t *testing.T) {
	g := Start(t, Options{Config: strings.Replace(cfg, "%s", "pg", 1), ProcessGroup: true, StopTimeout: 15 * time.Second})
	g.Stop()
	if code := g.ExitCode(); code != 0 {
		t.Errorf("exit code %d:\n%s", code, g.Tail())
	}
}
