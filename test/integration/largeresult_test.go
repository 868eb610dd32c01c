package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const largeResultCfg = `
name: large
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    down: {url: %q, timeout: 60s}
agents:
  px: {kind: proxy, servers: [down]}
  tb: {kind: toolbox, servers: [down]}
`

// A large result is relayed to the caller whole and unchanged, by a proxy
// and by a toolbox, and costs the gateway no copy of it (a proxy passes it
// through) or a few (a toolbox), not one per layer of mcp-go's types (a toolbox's execute_tool
// allocated 14 copies of it before it was written through raw; test/bench's
// BenchmarkLargeResult measures it). Allocation, not time: the figure does
// not depend on the machine being idle.
func TestLargeResultCopies(t *testing.T) {
	const size = 2 << 20
	blob, s := blobServer(size)
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	// The figure is the fast path's (PALLASGW_WIRE_FAST=off: 19-21 copies).
	g := startGateway(t, fmt.Sprintf(largeResultCfg, ts.URL+"/mcp"), "PALLASGW_WIRE_FAST=on")

	const calls = 3
	for _, c := range []struct {
		agent, tool string
		args        map[string]any
	}{
		{"px", "blob", nil},
		{"tb", "execute_tool", map[string]any{"server": "down", "tool": "blob"}},
	} {
		for _, st := range pxStyles {
			t.Run(c.agent+"/"+st.name, func(t *testing.T) {
				cs := connect(t, g.Base+"/agents/"+c.agent+"/mcp", st.version, nil)
				call := func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
					if err != nil {
						t.Fatal(err)
					}
					if got := textOf(t, res); res.IsError || got != blob {
						t.Fatalf("the result came back changed: isError %v, %d bytes", res.IsError, len(got))
					}
				}
				call() // the downstream session and the buffers
				before, _ := g.metric(t, "go_memstats_alloc_bytes_total")
				for range calls {
					call()
				}
				after, _ := g.metric(t, "go_memstats_alloc_bytes_total")
				copies := (after - before) / calls / size
				t.Logf("%s %s: the gateway allocated %.1f copies of the result per call", c.agent, st.name, copies)
				// A proxy streams a result this large from the downstream's
				// body (agents/wire, body.go): what it allocates is the first MiB, read
				// before the answer is known to be large (0.5 measured; held,
				// it was 3). A toolbox holds it (3.5 measured).
				if want := map[string]float64{"px": 1, "tb": 5}[c.agent]; copies > want {
					t.Errorf("the gateway allocated %.1f copies of a %d-byte result per call, want at most %.1f", copies, size, want)
				}
			})
		}
	}
}

// A downstream that breaks off a large answer after it began to flow to
// the caller (the proxy passes it through): the caller's call fails, it
// does not get a short result; the gateway says why in its log with the
// request id, counts the call as failed, and serves the next call.
func TestLargeResultBrokenMidway(t *testing.T) {
	const size = 3 << 20
	_, s := blobServer(size)
	s.AddTool(mcpgo.NewTool("small"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("ok"), nil
	})
	mcpSrv := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"name":"blob"`)) {
			w = &cutWriter{ResponseWriter: w, left: size / 2} // the connection is cut half way
		}
		mcpSrv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	// The streamed result's failure (the fast path's; mcp-go's path reads the answer
	// whole and the proxy reports the broken read as a tool error).
	g := startGateway(t, fmt.Sprintf(largeResultCfg, ts.URL+"/mcp"), "PALLASGW_WIRE_FAST=on")
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			cs := connect(t, g.Base+"/agents/px/mcp", st.version, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "blob"})
			if err == nil {
				t.Fatalf("a broken answer came back as a result: isError %v, %d bytes", res.IsError, len(textOf(t, res)))
			}
			// go-sdk's client closes a session whose response broke off.
			cs = connect(t, g.Base+"/agents/px/mcp", st.version, nil)
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "small"})
			if err != nil || textOf(t, res) != "ok" {
				t.Fatalf("the next call: %v", err)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Logs(), "the answer was being passed through to the caller") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	var line string
	for _, l := range strings.Split(g.Logs(), "\n") {
		if strings.Contains(l, "the answer was being passed through to the caller") {
			line = l
		}
	}
	if !strings.Contains(line, `"request_id":"`) || !strings.Contains(line, "downstream tool failed") {
		t.Errorf("no log line with the request id says why the call failed: %q", line)
	}
	m, err := g.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	failed := 0.0
	for series, v := range m {
		if strings.HasPrefix(series, "pallasgw_tool_calls_total{") && strings.Contains(series, `tool="blob"`) && !strings.Contains(series, `outcome="ok"`) {
			failed += v
		}
	}
	if failed != 2 {
		t.Errorf("failed calls of blob counted: %v, want 2 (%v)", failed, m)
	}
}

// cutWriter ends the response with a cut connection once left bytes are
// written.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) >= w.left {
		w.ResponseWriter.Write(p[:w.left])
		w.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.left -= len(p)
	return w.ResponseWriter.Write(p)
}

func (w *cutWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// blobServer is an MCP server whose tool blob answers blob, a text of size
// bytes.
func blobServer(size int) (blob string, s *server.MCPServer) {
	blob = strings.Repeat("0123456789abcdef", size/16)
	s = server.NewMCPServer("down", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("blob"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(blob), nil
	})
	return blob, s
}
