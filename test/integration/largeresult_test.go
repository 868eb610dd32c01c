package integration

import (
	"context"
	"fmt"
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
// and by a toolbox, and costs the gateway a few copies of it in
// allocation, not one per layer of mcp-go's types (a toolbox's execute_tool
// allocated 14 copies of it before it was written through raw; test/bench's
// BenchmarkLargeResult measures it). Allocation, not time: the figure does
// not depend on the machine being idle.
func TestLargeResultCopies(t *testing.T) {
	const size = 2 << 20
	blob := strings.Repeat("0123456789abcdef", size/16)
	s := server.NewMCPServer("down", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("blob"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(blob), nil
	})
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
				if copies > 5 {
					t.Errorf("the gateway allocated %.1f copies of a %d-byte result per call, want at most 5 (3 measured)", copies, size)
				}
			})
		}
	}
}
