package proxy

// The proxy's side of the fast path (agents/wire): a plain tools/call of a
// downstream tool runs callTool (policy decision, audit, relay, metrics)
// without mcp-go's server, and a downstream's result is written as the
// downstream sent it, not re-encoded (wire.RawResponse). The proxy registers
// every tool with placeholderSchema and get_health with healthSchema,
// neither of which binds an Mcp-Param-* header.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// Answers reports a name mcp-go would dispatch to callTool now (it is in
// the registry) that leads to a downstream tool.
func (p *Proxy) Answers(name string) bool {
	if _, ok := p.registered.Load(name); !ok {
		return false
	}
	_, ok := p.tools.Load(name)
	return ok
}

// Ensure registers name when it is not registered yet and the caller's
// listing shows it (as the Before hook does for mcp-go), so that the fast
// path answers a call that was not preceded by a listing.
func (p *Proxy) Ensure(ctx context.Context, name string, inbound http.Header) {
	p.ensureTool(ctx, name, inbound)
}

// RawArgs: the call goes down with the caller's arguments as sent
// (CallToolRaw). A raw result is what the proxy passes on whatever the
// wire switch says: the downstream's members as sent (a result that asks
// for input, a task), which mcp-go's typed result would drop. The switch
// picks how the call is made (mcpclient: the wire package's call, or
// mcp-go's transport.SendRequest).
func (p *Proxy) RawArgs() bool { return true }

// Answer runs callTool; a downstream's raw result is written through as it
// came, anything else as mcp-go would write it.
func (p *Proxy) Answer(ctx context.Context, c *wire.Call) any {
	req, id, modern := c.Req, c.ID, c.Modern
	res, rr, err := p.callRecovered(ctx, c)
	if err == nil && rr.Streamed() {
		return &wire.BodyAnswer{ID: id, Result: rr, Modern: modern, Self: p.serverInfoJSON()}
	}
	if err == nil && rr != nil {
		if msg, ok := wire.RawResponse(id, rr, modern, p.serverInfoJSON()); ok {
			return msg
		}
		res, err = wire.TypedResult(rr)
	}
	return wire.ToolAnswer(id, req.Params.Name, res, err, modern, p.d.Self)
}

// callRecovered is callTool under mcp-go's WithRecovery middleware (the
// agent's server is built with it), asking for the result as raw JSON when
// (CallToolRaw).
func (p *Proxy) callRecovered(ctx context.Context, c *wire.Call) (res *mcp.CallToolResult, rr *mcpclient.RawResult, err error) {
	defer wire.Recover(c.Req.Params.Name, &err)
	return p.forward(ctx, c.Req, true, c)
}

// rawArguments are the caller's arguments as it sent them when they are an
// object (the fast path parsed them: they are valid JSON), else what the
// typed path would send.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if raw := bytes.TrimSpace(req.Params.RawArguments); len(raw) > 0 && raw[0] == '{' {
		return raw
	}
	if args := req.GetArguments(); args != nil {
		b, _ := json.Marshal(args)
		return b
	}
	return nil
}

// serverInfoJSON is the agent's identity as decorate puts it in _meta,
// encoded once per agent.
func (p *Proxy) serverInfoJSON() json.RawMessage {
	p.infoOnce.Do(func() { p.info = wire.SelfJSON(p.d.Self) })
	return p.info
}
