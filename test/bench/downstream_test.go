package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// downstream is an MCP server in the benchmark process (mcp-go, Streamable
// HTTP, sessions on, 127.0.0.1) with one trivial tool: echo {text} answers
// "echo: <text>". It is the direct path of the routing benchmark and the
// tool of the agent loop. extra adds that many more tools with a schema of
// a realistic size (never called; they are what an agent offers its model).
type downstream struct {
	ts    *httptest.Server
	lists atomic.Int64 // tools/list requests served
}

func newDownstream(b *testing.B, extra ...int) *downstream {
	b.Helper()
	d := &downstream{}
	hooks := &server.Hooks{}
	hooks.AddBeforeListTools(func(context.Context, any, *mcp.ListToolsRequest) { d.lists.Add(1) })
	s := server.NewMCPServer("down", "1.0.0", server.WithToolCapabilities(false), server.WithHooks(hooks))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes text."), mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	for i := 0; i < append(extra, 0)[0]; i++ {
		s.AddTool(mcp.NewToolWithRawSchema(fmt.Sprintf("search_%02d", i), "Searches the knowledge base for documents that match a query, newest first.",
			json.RawMessage(realisticSchema)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("nothing found"), nil
		})
	}
	d.ts = httptest.NewServer(server.NewStreamableHTTPServer(s))
	b.Cleanup(d.ts.Close)
	return d
}

// realisticSchema is the size of a typical tool's input schema (~600 bytes).
const realisticSchema = `{"type":"object","properties":{
  "query":{"type":"string","description":"What to search for, in plain words."},
  "limit":{"type":"integer","minimum":1,"maximum":100,"description":"How many results to return."},
  "filters":{"type":"object","description":"Optional filters.","properties":{
    "after":{"type":"string","format":"date","description":"Only documents after this date."},
    "tags":{"type":"array","items":{"type":"string"},"description":"Only documents with all of these tags."}}},
  "sort":{"type":"string","enum":["relevance","newest","oldest"],"description":"Result order."}},
 "required":["query"]}`

func (d *downstream) url() string { return d.ts.URL + "/mcp" }
