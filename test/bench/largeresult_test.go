package bench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/load"
)

// Large results: what relaying one large tools/call result costs the
// gateway in memory, in copies of the result. A downstream answers every
// call with one text of largeSize; the gateway relays it through a proxy
// agent's tools/call and a toolbox's execute_tool, and, for what the fast
// path buys, through the toolbox with PALLASGW_WIRE_FAST=off (mcp-go's
// client and server: the result decoded and encoded again). Each path runs
// in a gateway process of its own, so that its peak resident set is its
// own.
//
// Two figures per path:
//   - bytes the gateway allocates per call (go_memstats_alloc_bytes_total)
//     over largeCalls sequential calls, for a session-based and a
//     sessionless (2026-07-28) caller, divided by the result's size;
//   - the rise of the gateway's peak resident set (VmHWM) over its idle
//     size while largeConcurrent session-based callers each take one
//     result at once, divided by largeConcurrent results.
//
// With PALLASGW_BENCH_PROFILE set, the gateway's allocation profiles
// before and after each path's sequential calls are saved there
// (large-AGENT-STYLE.allocs{.base,}.pb.gz).
//
// The call counts are fixed (moving this many bytes is the work; -benchtime
// does not scale it).
func BenchmarkLargeResult(b *testing.B) {
	noPerOpFigures(b)
	if warmUpOnly(b) {
		return
	}
	blob := strings.Repeat("0123456789abcdef", largeSize/16)
	down := newLargeDownstream(b, blob)
	resultBytes := float64(len(blob))
	for i, p := range []struct {
		name, agent, tool string
		args              map[string]any
		env               []string
	}{
		{"proxy tools/call", "px", "blob", nil, nil},
		{"toolbox execute_tool", "tb", "execute_tool", map[string]any{"server": "down", "tool": "blob"}, nil},
		{"toolbox execute_tool, PALLASGW_WIRE_FAST=off", "tb", "execute_tool", map[string]any{"server": "down", "tool": "blob"}, []string{"PALLASGW_WIRE_FAST=off"}},
	} {
		g := startGateway(b, fmt.Sprintf(largeConfig, down), p.env...)
		o := load.Options{URL: g.agentURL(p.agent), Tool: p.tool, Arguments: p.args, Concurrency: 1}
		o.Style, o.Requests = load.Session, 2
		mustLoad(b, g, o) // warm up: sessions, buffers
		perStyle := map[load.Style]float64{}
		for _, style := range []load.Style{load.Session, load.Sessionless} {
			o.Style, o.Requests = style, largeCalls
			name := fmt.Sprintf("large-%s-%s%s", p.agent, style, strings.Join(p.env, ""))
			g.saveProfile("/debug/pprof/allocs", name+".allocs.base.pb.gz")
			before := g.usage()
			mustLoad(b, g, o)
			_, _, bytes := perCall(before, g.usage(), largeCalls)
			g.saveProfile("/debug/pprof/allocs", name+".allocs.pb.gz")
			perStyle[style] = bytes / resultBytes
		}
		g.forceGC()
		idle := vmRSS(b, g.Pid())
		o.Style, o.Concurrency, o.Requests = load.Session, largeConcurrent, largeConcurrent
		for range 2 {
			mustLoad(b, g, o)
		}
		hwm := vmHWM(b, g.Pid())
		peak := (hwm - idle) / largeConcurrent / resultBytes
		b.Logf("%s: allocated per call %.1f results (session-based), %.1f (sessionless); peak resident set %s, over idle %.1f results per concurrent call (idle %s)",
			p.name, perStyle[load.Session], perStyle[load.Sessionless], fmtMB(hwm), peak, fmtMB(idle))
		b.ReportMetric(perStyle[load.Session], strings.ReplaceAll(p.agent+strings.Join(p.env, ""), "=", "-")+"-alloc-copies/call")
		// SPEC §12: 8 concurrent 60 MB proxied results peak under 1 GiB; a
		// toolbox result costs at most 3× its size (allocated per call).
		target, ok := "peak RSS < 1 GiB", hwm < 1<<30
		if p.agent == "tb" {
			target, ok = "≤ 3 copies allocated", max(perStyle[load.Session], perStyle[load.Sessionless]) <= 3.05
		}
		if len(p.env) > 0 {
			target, ok = "— (mcp-go's path, for comparison)", true
		}
		record(60+i, fmt.Sprintf("Large result (%d × %s), %s: allocated per call, session / sessionless; peak RSS (per concurrent call)", largeConcurrent, fmtMB(resultBytes), p.name),
			target,
			fmt.Sprintf("%.1f / %.1f copies; %s (%.1f copies)", perStyle[load.Session], perStyle[load.Sessionless], fmtMB(hwm), peak), "—", verdict(ok))
		g.Stop()
	}
}

const (
	largeSize       = 60 << 20 // bytes of text in each result (SPEC §12: 8 concurrent 60 MB results)
	largeCalls      = 4        // sequential calls per style
	largeConcurrent = 8        // callers at once for the peak
)

const largeConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
mcp:
  servers:
    down: {url: %q, timeout: 60s}
agents:
  px: {kind: proxy, servers: [down]}
  tb: {kind: toolbox, servers: [down]}
`

// newLargeDownstream is an MCP server in this process (mcp-go, Streamable
// HTTP) whose one tool, blob, answers text.
func newLargeDownstream(b *testing.B, text string) string {
	b.Helper()
	s := server.NewMCPServer("down", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("blob", mcp.WithDescription("Answers a large text.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(text), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	b.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// mustLoad runs o to the end and fails the benchmark on any failed call.
func mustLoad(b *testing.B, g *gateway, o load.Options) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := load.Run(ctx, o)
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("%d of %d calls failed, first: %s; gateway: %v", res.Errors, res.Calls, res.FirstErr, g.problems(3))
	}
	if err != nil {
		b.Fatal(err)
	}
}

// vmRSS and vmHWM are a process's resident set now and at its peak, in
// bytes (/proc/<pid>/status).
func vmRSS(b *testing.B, pid int) float64 { return procStatus(b, pid, "VmRSS:") }
func vmHWM(b *testing.B, pid int) float64 { return procStatus(b, pid, "VmHWM:") }

func procStatus(b *testing.B, pid int, field string) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatalf("%s %q: %v", field, line, err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
