package bench

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/load"
)

// Tool pinning's cost: tools/call through a proxy agent whose server has
// pin_tools: enforce (every tool approved in a pins file written by
// `pallasgw pins init`), against the same config with pin_tools: off, in
// the same rounds (ABBA), at 64 callers, sessionless. A definition is
// hashed when a tool list is read, never per call; a call costs the
// Guard's map lookup. Target: ≤ 5% of routing throughput (SPEC §12).
func BenchmarkPinCost(b *testing.B) {
	d := newDownstream(b)
	dir := b.TempDir()
	pins := filepath.Join(dir, "pins.yaml")
	cfg := func(mode string) string { return fmt.Sprintf(pinsBenchConfig, pins, d.url(), mode) }
	initCfg := filepath.Join(dir, "init.yaml")
	if err := os.WriteFile(initCfg, []byte(strings.ReplaceAll(cfg("enforce"), "{{PORT}}", "1")), 0o600); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(binary, "pins", "init", "--config", initCfg).CombinedOutput(); err != nil {
		b.Fatalf("pallasgw pins init: %v\n%s", err, out)
	}
	off, on := startGateway(b, cfg("off")), startGateway(b, cfg("enforce"))
	opts := func(g *gateway, n int) load.Options {
		return load.Options{URL: g.agentURL("px"), Style: load.Sessionless, Concurrency: 64, Requests: n, Tool: "echo", Arguments: map[string]any{"text": "hi"},
			Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}}}
	}
	runLoad(b, opts(off, 256))
	runLoad(b, opts(on, 256)) // fails the benchmark if pinning refused a call: echo must be approved
	if warmUpOnly(b) {
		return
	}
	gws := []*gateway{off, on}
	m := runABBA(func(i int) load.Result { return runLoad(b, opts(gws[i], calls(b))) }, func(i int) usage { return gws[i].usage() })
	rates := m.rates // off, enforce: calls/s by round
	if v := on.gauge(`pallasgw_tool_pins_pending{server="down"}`); v != 0 {
		b.Errorf("%v tools await approval on the pinned gateway: pins init did not pin them all", v)
	}
	ratios := m.ratios()
	ratio := median(ratios)
	offCPU, offAllocs, offBytes := m.perCall(0)
	onCPU, onAllocs, onBytes := m.perCall(1)
	reportGateway(b, onCPU, onAllocs, onBytes)
	b.ReportMetric(ratio, "enforce/off-c64-throughput")
	var perRound []string
	for _, r := range ratios {
		perRound = append(perRound, fmt.Sprintf("%.2f", r))
	}
	b.Logf("pin_tools enforce ÷ off, 64 callers, by round: %s", strings.Join(perRound, " "))
	b.Logf("tool pinning, sessionless, %d calls per gateway and round, %d rounds (medians):\n%s", calls(b), rounds(),
		table([]string{"figure", "pin_tools: off", "pin_tools: enforce", "ratio", "target"}, func(add func(...string)) {
			add("calls/s, 64 callers", fmtRate(median(rates[0])), fmtRate(median(rates[1])), fmt.Sprintf("%.3f", ratio),
				fmt.Sprintf("≥ %.2f ", targetPinRatio)+verdict(ratio >= targetPinRatio))
			add("gateway CPU/call", us(offCPU), us(onCPU), fmt.Sprintf("%.2f", float64(onCPU)/float64(max(offCPU, time.Nanosecond))), "")
			add("gateway allocs/call", fmt.Sprintf("%.0f (%.1f kB)", offAllocs, offBytes/1024), fmt.Sprintf("%.0f (%.1f kB)", onAllocs, onBytes/1024), "", "")
		}))
	record(28, "tool pinning (pin_tools enforce, every tool approved): throughput, 64 callers, against off", fmt.Sprintf("≥ %.0f%% of off", 100*targetPinRatio),
		fmt.Sprintf("%s (off %s)", fmtRate(median(rates[1])), fmtRate(median(rates[0]))), "",
		fmt.Sprintf("%.1f%% of off; CPU/call %s (off %s)", 100*ratio, us(onCPU), us(offCPU)))
}

// targetPinRatio: pinning on keeps at least this share of routing
// throughput at 64 callers (printed against, never asserted).
const targetPinRatio = 0.95

// pinsBenchConfig is routingConfig's proxy with a pins file and the
// server's pin_tools mode.
const pinsBenchConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
pins: %q
mcp:
  servers:
    down: {url: %q, timeout: 30s, pin_tools: %s}
agents:
  px: {kind: proxy, servers: [down]}
`
