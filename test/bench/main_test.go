// Package bench holds the performance benchmarks, run by `make bench`. Each
// one starts the real pallasgw binary (built here without the race
// detector) on 127.0.0.1, drives it with the raw-HTTP load engine of
// test/load, and measures the direct path — the same work without the
// gateway — in the same run, so that every figure is printed as a ratio
// against it. Nothing here asserts on time: the figures are reported with
// b.ReportMetric, logged per benchmark, and gathered in one table printed
// at the end of the run.
//
// With -benchtime Nx (make bench uses 2000x), N is the number of calls per
// measured path and round, and the framework's first invocation (b.N = 1)
// only warms up; with a duration, every benchmark runs once with 2,000
// calls. The reload and footprint benchmarks cap the count at the targets' 100
// reloads and 1,000 streams.
//
// Environment:
//
//	PALLASGW_BENCH_BINARY           use this gateway binary instead of building one
//	PALLASGW_BENCH_ROUNDS           rounds of direct/gateway alternation (default 3)
//	PALLASGW_BENCH_PROFILE          a directory: after measuring, the routing and
//	                                agent-loop benchmarks load the gateway for
//	                                PALLASGW_BENCH_PROFILE_SECONDS (default 10) and
//	                                save its CPU and allocation profiles there;
//	                                the footprint benchmark saves heap profiles
//
// The gateway's own cost per call is read from the gateway process, not from
// this one: CPU from /proc/<pid>/stat, allocations from
// go_memstats_mallocs_total and go_memstats_alloc_bytes_total on /metrics.
// Those replace B/op and allocs/op (which -benchmem would fill with the load
// generator's), and ns/op is hidden (wall time over b.N means nothing here).
// The reload and footprint benchmarks measure nothing per op and report 0
// for all three.
//
// It owns nothing of the gateway and imports none of its packages.
package bench

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

var binary string

func TestMain(m *testing.M) {
	if target := os.Getenv(forwardEnv); target != "" {
		os.Exit(serveForwarder(target))
	}
	if os.Getenv(sinkEnv) != "" {
		os.Exit(serveOTLPSink())
	}
	code := func() int {
		if b := os.Getenv("PALLASGW_BENCH_BINARY"); b != "" {
			binary = b
		} else if benchRequested() {
			bin, cleanup, err := gwtest.BuildTemp(false) // no -race: these are benchmarks
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer cleanup()
			binary = bin
		}
		code := m.Run()
		printSummary()
		return code
	}()
	os.Exit(code)
}

// benchRequested reports whether -test.bench was given (else there is
// nothing to build for).
func benchRequested() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.bench=") && a != "-test.bench=" {
			return true
		}
	}
	return false
}

// row is one line of the summary table.
type row struct {
	order    int
	metric   string
	target   string
	measured string
	direct   string // the direct path's figure ("" when there is none)
	ratio    string
}

var (
	summaryMu sync.Mutex
	summary   = map[string]row{} // by metric; the last (largest) run wins
)

// record adds or replaces a summary line.
func record(order int, metric, target, measured, direct, ratio string) {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	summary[metric] = row{order, metric, target, measured, direct, ratio}
}

func printSummary() {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	if len(summary) == 0 {
		return
	}
	rows := make([]row, 0, len(summary))
	for _, r := range summary {
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].order != rows[j].order {
			return rows[i].order < rows[j].order
		}
		return rows[i].metric < rows[j].metric
	})
	fmt.Println()
	fmt.Println("Summary (ratio: gateway against the direct path of the same run, against nginx's hop or the gateway without auth where the row says so, or measured/target where no direct path exists)")
	fmt.Println(table([]string{"metric", "target", "measured", "direct", "ratio"}, func(add func(...string)) {
		for _, r := range rows {
			add(r.metric, r.target, r.measured, r.direct, r.ratio)
		}
	}))
}

// table renders rows as a Markdown table (readable as text too).
func table(head []string, fill func(add func(...string))) string {
	rows := [][]string{head}
	fill(func(cells ...string) { rows = append(rows, cells) })
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(r []string) {
		b.WriteString("|")
		for i, c := range r {
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|")
	for _, w := range width {
		b.WriteString(strings.Repeat("-", w+2) + "|")
	}
	b.WriteString("\n")
	for _, r := range rows[1:] {
		line(r)
	}
	return b.String()
}
