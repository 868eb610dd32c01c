package bench

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/load"
)

// maxRun bounds every measured load; a run that reaches it is cut short and
// reported with what it measured.
const maxRun = 3 * time.Minute

// runLoad runs one load and reports its errors as benchmark errors. It may
// run on any goroutine (it never calls FailNow).
func runLoad(b *testing.B, o load.Options) load.Result {
	b.Helper()
	if o.Duration == 0 {
		o.Duration = maxRun
	}
	res, err := load.Run(context.Background(), o)
	if err != nil {
		b.Errorf("load on %s: %v", o.URL, err)
		return res
	}
	if res.Errors > 0 {
		b.Errorf("%s (%s, c=%d): %d of %d calls failed; first: %s", o.URL, o.Style, o.Concurrency, res.Errors, res.Calls, res.FirstErr)
	}
	return res
}

// rounds is how many times direct and gateway runs alternate.
func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("PALLASGW_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMS(v float64) string {
	switch {
	case v == 0:
		return "0 ms"
	case v < 1 && v > -1:
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// fmtAdded formats a latency difference with its sign.
func fmtAdded(v float64) string {
	if v < 0 {
		return "−" + fmtMS(-v)
	}
	return "+" + fmtMS(v)
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// fmtRatio formats a ratio as a multiple; "n/a" for NaN.
func fmtRatio(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", v)
}

func fmtRate(v float64) string { return fmt.Sprintf("%.0f calls/s", v) }

func fmtMB(v float64) string { return fmt.Sprintf("%.1f MB", v/(1<<20)) }

// verdict marks a figure against its target.
func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// noPerOpFigures hides ns/op, B/op and allocs/op for benchmarks that
// measure nothing per op (-benchmem would show the load generator's).
func noPerOpFigures(b *testing.B) {
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(0, "B/op")
	b.ReportMetric(0, "allocs/op")
}

// warmUpOnly reports whether this invocation is the framework's first,
// b.N = 1 probe before a -benchtime Nx run: the benchmarks only warm up
// then, and print nothing.
func warmUpOnly(b *testing.B) bool { return b.N == 1 && benchtimeIsCount() }

// defaultCalls is the calls per path and round when -benchtime is a
// duration: a benchmark's first invocation (b.N = 1) then usually takes
// longer than the benchtime and is the only one.
const defaultCalls = 2000

// calls is the number of calls per path and round: b.N under -benchtime
// Nx, else defaultCalls.
func calls(b *testing.B) int {
	if benchtimeIsCount() {
		return b.N
	}
	return defaultCalls
}

func benchtimeIsCount() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && strings.HasSuffix(f.Value.String(), "x")
}

// reportGateway hides ns/op (wall time over b.N, meaningless for these
// benchmarks) and replaces B/op and allocs/op (-benchmem would show the load
// generator's) with the gateway's per call.
func reportGateway(b *testing.B, cpu time.Duration, allocs, bytes float64) {
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bytes, "B/op")
	b.ReportMetric(allocs, "allocs/op")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond), "gw-cpu-µs/call")
}

// medianOrNaN is median, NaN for no figures (a path that did not run).
func medianOrNaN(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return median(xs)
}

// abba is what alternated runs of two sides measured: side 0 (A, the
// baseline) and side 1 (B).
type abba struct {
	rates [2][]float64 // calls/s by round
	cost  [2]usage     // resource use summed over the rounds
	calls [2]int       // calls summed over the rounds
}

// runABBA runs rounds() rounds of both sides, A then B, then B then A, and
// so on, so that drift of a shared machine falls on both alike. run runs
// one load of a side; use reads the side's resource use before and after
// it.
func runABBA(run func(side int) load.Result, use func(side int) usage) abba {
	var m abba
	for r := 0; r < rounds(); r++ {
		order := []int{0, 1}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			before := use(i)
			res := run(i)
			after := use(i)
			m.rates[i] = append(m.rates[i], res.Rate())
			m.calls[i] += res.Calls
			m.cost[i].cpu += after.cpu - before.cpu
			m.cost[i].mallocs += after.mallocs - before.mallocs
			m.cost[i].bytes += after.bytes - before.bytes
		}
	}
	return m
}

// ratios is B's rate over A's, by round.
func (m abba) ratios() []float64 {
	var out []float64
	for i := range m.rates[0] {
		out = append(out, m.rates[1][i]/m.rates[0][i])
	}
	return out
}

// perCall is side i's resource use per call.
func (m abba) perCall(i int) (cpu time.Duration, allocs, bytes float64) {
	return perCall(usage{}, m.cost[i], m.calls[i])
}
