package endpoint

import (
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

// Test hooks for package endpoint_test.

// MCPHandler is mcp-go's Streamable HTTP server behind the endpoint h.
func MCPHandler(h http.Handler) *server.StreamableHTTPServer { return h.(*Endpoint).d.MCP }

// Waiting is the number of requests waiting for a caller's answer.
func Waiting(c *CallerRequests) int {
	c.asks.mu.Lock()
	defer c.asks.mu.Unlock()
	return len(c.asks.waiting)
}

// Running is the number of calls tracked for cancellation.
func Running(c *CallerRequests) int {
	c.running.mu.Lock()
	defer c.running.mu.Unlock()
	return len(c.running.calls)
}

// Reasons a request cannot be sent to a caller.
var (
	ErrRequestModern    = errRequestModern
	ErrRequestNoSession = errRequestNoSession
)
