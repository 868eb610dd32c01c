package agents

// The proxy's side of the fast path (fast_call.go): a plain tools/call of a
// downstream tool runs callTool (policy decision, audit, relay, metrics)
// without mcp-go's server, and a downstream's result is written as the
// downstream sent it, not re-encoded (fast_raw.go). The proxy registers
// every tool with placeholderSchema and get_health with healthSchema,
// neither of which binds an Mcp-Param-* header.

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// fastName reports a name mcp-go would dispatch to callTool now (it is in
// the registry) that leads to a downstream tool.
func (p *proxy) fastName(name string) bool {
	if _, ok := p.registered.Load(name); !ok {
		return false
	}
	_, ok := p.tools.Load(name)
	return ok
}

// rawArgs: a Downstream that gives raw results takes raw arguments too.
func (p *proxy) rawArgs() bool {
	_, ok := p.a.set.deps.Downstream.(RawDownstream)
	return ok
}

// streamsAnswer: a proxy answers session-based callers that accept SSE as
// SSE (proxy.go, the end of its package comment).
func (*proxy) streamsAnswer() bool { return true }

// answer runs callTool; a downstream's raw result is written through as it
// came, anything else as mcp-go would write it.
func (p *proxy) answer(ctx context.Context, req mcp.CallToolRequest, id any, modern bool) any {
	res, rr, err := p.callRecovered(ctx, req)
	if err == nil && rr != nil {
		if msg, ok := p.rawResponse(id, rr, modern); ok {
			return msg
		}
		res, err = typedResult(rr)
	}
	return p.a.toolAnswer(id, req.Params.Name, res, err, modern)
}

// callRecovered is callTool under mcp-go's WithRecovery middleware (the
// agent's server is built with it), asking for the result as raw JSON when
// the Downstream can give it (fast_raw.go).
func (p *proxy) callRecovered(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, rr *mcpclient.RawResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, rr, err = nil, nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, r)
		}
	}()
	raw, _ := p.a.set.deps.Downstream.(RawDownstream)
	return p.forward(ctx, req, raw)
}

// typedResult decodes a raw result for the typed path.
func typedResult(rr *mcpclient.RawResult) (*mcp.CallToolResult, error) {
	res, err := mcp.ParseCallToolResult(&rr.JSON)
	if err != nil {
		return nil, fmt.Errorf("the downstream's result: %w", err)
	}
	return res, nil
}
