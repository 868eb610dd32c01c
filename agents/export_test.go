package agents

import "github.com/mark3labs/mcp-go/server"

// MCPServer is the agent's MCP server (its registry), for package
// agents_test.
func MCPServer(a *Agent) *server.MCPServer { return a.mcp }

// HealthEntries is the number of credential sets whose health the agent
// has cached.
func HealthEntries(a *Agent) int {
	a.health.mu.Lock()
	defer a.health.mu.Unlock()
	return len(a.health.entries)
}

// MaxHealthEntries bounds HealthEntries.
const MaxHealthEntries = maxHealthEntries
