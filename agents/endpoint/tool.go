package endpoint

// An agent's send_message on the fast path (agents/wire), for the kinds
// that have one (llm, chain, router, parallel): the same handler (package
// agents' handleSendMessage) under mcp-go's recovery middleware, its
// progress notifications on the fast path's stream (agents.Reporter), and
// the answer written as mcp-go would write it. mcp-go's server side was
// about a fifth of the gateway's CPU in an agent loop with one tool call.

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// Tool is the fast path's target of one tool that an mcp-go handler
// answers: an agent's send_message. The agent's MCP server must run its
// handlers under server.WithRecovery, as Answer does.
type Tool struct {
	Name string // the tool (config.Agent.ToolName; never get_health)
	// Handler is the handler mcp-go's registry holds for Name, given the
	// call (its downstream tools/calls add the call's ExtraParams and
	// ExtraMeta).
	Handler func(ctx context.Context, c *wire.Call) (*mcp.CallToolResult, error)
	Self    mcp.Implementation // the agent's identity as its MCP server gives it
}

// Answers is the tool's name.
func (t Tool) Answers(name string) bool { return name == t.Name }

// RawArgs: the handler reads the arguments decoded.
func (Tool) RawArgs() bool { return false }

func (t Tool) Answer(ctx context.Context, c *wire.Call) any {
	res, err := t.recovered(ctx, c)
	return wire.ToolAnswer(c.ID, c.Req.Params.Name, res, err, c.Modern, t.Self)
}

// recovered is the handler under mcp-go's WithRecovery middleware.
func (t Tool) recovered(ctx context.Context, c *wire.Call) (res *mcp.CallToolResult, err error) {
	defer wire.Recover(c.Req.Params.Name, &err)
	return t.Handler(ctx, c)
}
