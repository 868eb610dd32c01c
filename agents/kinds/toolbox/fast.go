package toolbox

// execute_tool on the fast path (agents/wire): the same checks, audit
// line and metrics as the handler mcp-go runs, with the downstream's
// result written through as the downstream sent it (CallToolRaw;
// *mcpclient.Manager takes a raw POST on a
// Streamable HTTP session, mcp-go's client elsewhere). Through mcp-go's
// client and server a result is decoded into mcp-go's types and encoded
// again, for the answer and for the audit line's size: an 8 MiB result
// cost the gateway 13 copies of it in allocation that way, 3 this way
// (test/bench/README.md, "Large results"). The tool's own arguments (args)
// go downstream as the caller wrote them. With the wire switch
// off (wire.Fast) session-based calls go through mcp-go's handler again
// and results through mcp-go's client; a 2026-07-28 call runs here either
// way (the input-required bridge), its result typed.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// Target is the toolbox's execute_tool as a wire.Target: the agent's
// endpoint runs it for plain calls (wire.Serve) and, for 2026-07-28
// callers, through its input-required bridge.
type Target struct {
	tb       *toolbox
	infoOnce sync.Once
	info     json.RawMessage
}

const executeToolName = "execute_tool"

// Answers is execute_tool.
func (t *Target) Answers(name string) bool { return name == executeToolName }

// RawArgs: an object of arguments is read here, its args member kept as
// the caller sent it.
func (t *Target) RawArgs() bool { return true }

// Answer runs execute_tool under mcp-go's WithRecovery middleware (the
// agent's server is built with it) and answers as mcp-go would, the result
// written raw when it came so.
func (t *Target) Answer(ctx context.Context, c *wire.Call) any {
	id, modern := c.ID, c.Modern
	res, rr, err := t.recovered(ctx, c)
	if err == nil && res == nil {
		if msg, ok := wire.RawResponse(id, rr, modern, t.selfJSON()); ok {
			return msg
		}
		res, err = wire.TypedResult(rr)
	}
	return wire.ToolAnswer(id, executeToolName, res, err, modern, t.tb.d.Self)
}

func (t *Target) recovered(ctx context.Context, wc *wire.Call) (res *mcp.CallToolResult, rr *mcpclient.RawResult, err error) {
	defer wire.Recover(executeToolName, &err)
	req, extras := wc.Req, mcpclient.ExtrasOf(wc)
	ok := wire.Fast() // off: mcp-go's client, typed
	members := map[string]json.RawMessage{}
	if !ok || req.Params.Arguments != nil || !rawObject(req.Params.RawArguments) ||
		json.Unmarshal(req.Params.RawArguments, &members) != nil {
		// mcp-go's handler's path (tb.handle), with the arguments decoded
		// as mcp-go decodes them (the fast path leaves an object
		// undecoded: RawArgs), its notifications on wc's stream.
		if req.Params.Arguments == nil && len(req.Params.RawArguments) > 0 {
			_ = json.Unmarshal(req.Params.RawArguments, &req.Params.Arguments)
		}
		c := newCall(executeToolName)
		c.wc = wc
		res, err = t.tb.handled(ctx, c, req, t.tb.executeTool) // the handler mcp-go holds
		return res, nil, err
	}
	toolArgs := members["args"]
	delete(members, "args")
	args := make(map[string]any, len(members))
	for k, v := range members {
		var a any
		_ = json.Unmarshal(v, &a) // valid JSON: the fast path parsed the body
		args[k] = a
	}
	req.Params.Arguments = args
	c := newCall(executeToolName)
	c.wc = wc
	res, err = t.tb.run(ctx, c, req, func(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		rr, err = t.tb.executeRaw(ctx, c, req, args, toolArgs, extras)
		return nil, err
	})
	if err == nil && rr != nil && rr.ResultType == string(mcp.ResultTypeInputRequired) {
		// A downstream's own input_required result: the typed path answers
		// it (wire.RawResponse declines it).
		if res, err = wire.TypedResult(rr); err != nil {
			err = t.tb.downstreamError(ctx, c, err)
		}
		rr = nil
	}
	if res = t.tb.settle(ctx, c, res, rr, err); res != nil {
		rr = nil
	}
	return res, rr, nil
}

// executeRaw is executeTool with the result raw; the downstream call adds
// the caller's members extras (nil: none).
func (tb *toolbox) executeRaw(ctx context.Context, c *tbCall, req mcp.CallToolRequest, args map[string]any, toolArgs json.RawMessage, extras mcpclient.CallExtras) (*mcpclient.RawResult, error) {
	toolArgs = bytes.TrimSpace(toolArgs)
	switch {
	case len(toolArgs) == 0 || string(toolArgs) == "null":
		toolArgs = json.RawMessage(`{}`) // as the typed path sends none
	case toolArgs[0] != '{':
		return nil, tbErr(CodeInvalidArgument, "args must be an object")
	}
	return execute(tb, ctx, c, req, args, func(ctx context.Context, hdr http.Header, onProgress mcpclient.ProgressFunc, relay *mcpclient.Relay) (*mcpclient.RawResult, error) {
		return tb.d.Downstream.CallToolRaw(ctx, c.server, c.target, toolArgs, hdr, onProgress, mcpclient.CallOptions{Extras: extras, Relay: relay})
	})
}

// rawObject reports arguments sent as a JSON object.
func rawObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// selfJSON is the agent's identity as a 2026-07-28 result's _meta names it,
// encoded once.
func (t *Target) selfJSON() json.RawMessage {
	t.infoOnce.Do(func() { t.info = wire.SelfJSON(t.tb.d.Self) })
	return t.info
}
