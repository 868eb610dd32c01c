package agents

// An agent's send_message on the fast path (agents/fastcall), for the kinds
// that have one (llm, chain, router, parallel): the same handler
// (handleSendMessage) under mcp-go's recovery middleware, its progress
// notifications on the fast path's stream (Reporter), and the answer
// written as mcp-go would write it. mcp-go's server side was about a fifth
// of the gateway's CPU in an agent loop with one tool call.

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/fastcall"
)

// sendMessage is the fast path's target of an agent with a send_message
// tool.
type sendMessage struct{ a *Agent }

// Answers is the agent's tool (config.Agent.ToolName, never get_health).
func (s sendMessage) Answers(name string) bool { return name == s.a.Config.ToolName }

// RawArgs: handleSendMessage reads the arguments decoded.
func (sendMessage) RawArgs() bool { return false }

func (s sendMessage) Answer(ctx context.Context, req mcp.CallToolRequest, id any, modern bool) any {
	res, err := s.recovered(ctx, req)
	return fastcall.ToolAnswer(id, req.Params.Name, res, err, modern, s.a.self())
}

// recovered is handleSendMessage under mcp-go's WithRecovery middleware
// (the agent's server is built with it).
func (s sendMessage) recovered(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, r)
		}
	}()
	return s.a.handleSendMessage(ctx, req)
}
