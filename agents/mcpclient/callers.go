package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// ToolCaller is what the agent kinds (proxy, toolbox, the tool loop) need
// of the downstream MCP clients: a server's tools as the caller's outbound
// headers hdr list them, and a call of one. *Manager implements it.
type ToolCaller interface {
	Tools(ctx context.Context, server string, hdr http.Header) ([]mcp.Tool, error)
	CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress ProgressFunc) (*mcp.CallToolResult, error)
}

// RawCaller gives a tools/call result as the downstream sent it, for the
// fast path's raw pass-through (agents/wire, raw.go). args is the
// arguments object as JSON, or nil. *Manager implements it.
type RawCaller interface {
	CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc) (*RawResult, error)
}

var (
	_ ToolCaller = (*Manager)(nil)
	_ RawCaller  = (*Manager)(nil)
)
