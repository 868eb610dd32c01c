package agents

import "github.com/mark3labs/mcp-go/server"

// MCPServer is the agent's MCP server (its registry), for package
// agents_test.
func MCPServer(a *Agent) *server.MCPServer { return a.mcp }
