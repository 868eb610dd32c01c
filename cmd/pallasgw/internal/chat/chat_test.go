package chat

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An agent without the message tool (a proxy, a toolbox, a renamed
// tool_name) is reported before the first message, with its tools and
// --tool, not as the server's "tool not found".
func TestChatSuggestsTool(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "px", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "search", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The agent's endpoint is <url>/agents/<name>/mcp; the handler ignores the path.
	var out strings.Builder
	err := Run(ctx, Options{URL: ts.URL, Agent: "px", Message: "hi", In: strings.NewReader(""), Out: &out, Progress: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `agent px has no tool "send_message"; its tools: search (choose one with --tool NAME)`) {
		t.Fatalf("err %v, want the agent's tools and --tool", err)
	}
	out.Reset()
	if err := Run(ctx, Options{URL: ts.URL, Agent: "px", Tool: "search", Message: "hi", In: strings.NewReader(""), Out: &out, Progress: io.Discard}); err != nil || strings.TrimSpace(out.String()) != "found" {
		t.Fatalf("--tool search: %v %q", err, out.String())
	}
}
