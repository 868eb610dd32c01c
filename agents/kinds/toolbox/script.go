package toolbox

// run_script (package codemode) beside the meta-tools: a script calls the
// tools get_server_tools shows the caller, each call checked, audited and
// counted as the execute_tool call it amounts to (prepareExecute, settle),
// after it takes one request from the caller's requests_per_minute
// (Deps.Quota). A refusal (DENIED_BY_POLICY: policy or pins, a quota, a
// tool asking for input) stops the script; any other failure is the
// tool's error, a value the script can test.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

func (tb *toolbox) registerScript(srv *server.MCPServer) {
	srv.AddTool(mcp.NewToolWithRawSchema(codemode.ToolName, codemode.ToolboxDescription, tb.schema(codemode.Schema)),
		tb.handle(codemode.ToolName, tb.runScript))
}

func (tb *toolbox) runScript(ctx context.Context, c *tbCall, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code, ok := req.GetArguments()["code"].(string)
	if !ok || code == "" {
		return nil, tbErr(CodeInvalidArgument, "code is required: the script, as a string")
	}
	var servers []string
	var tools []codemode.Tool
	for _, srv := range tb.d.Servers {
		if !tb.d.Callers.AllowServer(c.caller, srv).Allowed {
			continue
		}
		servers = append(servers, srv)
		list, err := tb.visibleTools(ctx, c.caller, srv, req.Header)
		if err != nil {
			continue // its calls fail as SERVER_UNAVAILABLE; the script decides
		}
		tools = append(tools, codemode.ToolsOf(srv, list)...)
	}
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	_, progress, done := tb.d.Relay(ctx, c.wc, token)
	defer done()
	s := codemode.Script{Code: code, Tools: codemode.Bind(servers, tools),
		Call: func(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			return tb.scriptCall(ctx, c.caller, req, server, tool, args)
		},
		Hidden: func(server, tool string) error { return tb.scriptHidden(ctx, c.caller, server, tool) }}
	step := 0.0
	if progress != nil {
		s.Progress = func(msg string) {
			step++
			progress(step, nil, msg)
		}
	}
	out, err := tb.d.Script.Run(ctx, s)
	if err != nil {
		text := err.Error()
		if out.Printed != "" {
			text = "The script printed, before it stopped:\n" + out.Printed + "\n" + text
		}
		return mcp.NewToolResultError(text), nil
	}
	return mcp.NewToolResultText(out.Text()), nil
}

// scriptCall is one call of a script: execute_tool's checks, audit line
// and metrics.
func (tb *toolbox) scriptCall(ctx context.Context, caller string, req mcp.CallToolRequest, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c := newCall(executeToolName)
	c.caller = caller
	res, err := tb.scriptExecute(ctx, c, req, server, tool, args)
	res = tb.settle(ctx, c, res, nil, err)
	var tberr *toolboxError
	if errors.As(err, &tberr) && tberr.code == CodeDenied || errors.Is(err, errStop) {
		return nil, err
	}
	return res, nil
}

// errStop marks a script call's failure that stops the script (a quota,
// input asked of the caller).
var errStop = errors.New("stops the script")

type stopError struct{ err error }

func stop(err error) error                { return &stopError{err} }
func (e *stopError) Error() string        { return e.err.Error() }
func (e *stopError) Unwrap() error        { return e.err }
func (e *stopError) Is(target error) bool { return target == errStop }

func (tb *toolbox) scriptExecute(ctx context.Context, c *tbCall, req mcp.CallToolRequest, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if err := tb.d.Quota(ctx); err != nil {
		return nil, stop(err)
	}
	var toolArgs map[string]any
	if err := json.Unmarshal(args, &toolArgs); err != nil {
		return nil, tbErr(CodeInvalidArgument, "args: %v", err)
	}
	req.Params.Arguments = map[string]any{"server": server, "tool": tool}
	req.Params.Meta = nil // the script's own progress token is not the call's
	call, err := tb.prepareExecute(ctx, c, req, req.GetArguments())
	if err != nil {
		return nil, err
	}
	defer call.cancel()
	relay, asked := codemode.NoInput()
	res, err := tb.d.Downstream.CallTool(call.ctx, server, tool, toolArgs, call.hdr, nil, mcpclient.CallOptions{Relay: relay})
	if aerr := asked(); aerr != nil {
		return nil, stop(aerr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, stop(ctx.Err())
		}
		return nil, tb.downstreamError(ctx, c, err)
	}
	return res, nil
}

// scriptHidden says why a tool a script names is not among its tools:
// policy denies it to the caller (audited as an execute_tool refusal), or
// pins hide it; nil: no such tool.
func (tb *toolbox) scriptHidden(ctx context.Context, caller, server, tool string) error {
	c := newCall(executeToolName)
	c.caller, c.server, c.target = caller, server, tool
	err := tb.check(c, tb.decideTool(caller, server, tool), "tool %s of server %s is denied for caller %q", tool, server, caller)
	if err == nil {
		if herr := tb.d.Downstream.Hidden(server, tool); herr != nil {
			err = tb.downstreamError(ctx, c, herr)
		}
	}
	if err != nil {
		tb.settle(ctx, c, nil, nil, err)
	}
	return err
}
