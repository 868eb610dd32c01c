package toolloop

// Code mode of an llm agent (tool_mode: code): the model is offered one
// tool, run_script (package codemode), whose description lists the tools
// a script may call; with tool_search on, the tools the search has found.
// Sub-agents and search_tools stay model tools. Every call a script makes
// is governedCall's (loop.go), as the tool loop's, after it takes one
// request from the caller's requests_per_minute (scriptRequest).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/policy"
)

// codeTools are the tools a code-mode model turn is offered: run_script
// over the server tools modelTools would offer, then the rest of them
// (sub-agents, search_tools) as they are. The script's tools are kept in
// ts for the turn's run_script calls.
func (r *llmRunner) codeTools(offered []llm.Tool, ts *toolset) []llm.Tool {
	var others []llm.Tool
	ts.script, others = r.bind(offered, ts)
	run := llm.Tool{Name: codemode.ToolName, Description: ts.script.Description(), InputSchema: json.RawMessage(codemode.Schema)}
	return append([]llm.Tool{run}, others...)
}

// bind names the server tools of offered for a script; others are the
// rest.
func (r *llmRunner) bind(offered []llm.Tool, ts *toolset) (b *codemode.Bindings, others []llm.Tool) {
	var tools []codemode.Tool
	for _, d := range offered {
		ref, ok := ts.refs[d.Name]
		if !ok || ref.agent != "" {
			others = append(others, d)
			continue
		}
		tools = append(tools, codemode.Tool{Server: ref.server, Name: ref.tool, Description: d.Description, InputSchema: d.InputSchema})
	}
	return codemode.Bind(r.a.Config.Servers, tools), others
}

// runScript runs the model's run_script call.
func (r *llmRunner) runScript(ctx context.Context, c *Call, ts *toolset, tc llm.ToolCall) llm.Message {
	fail := func(text string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: agents.Cut(text, r.maxBytes)}
	}
	raw, err := objectArguments(tc.Arguments)
	var args struct {
		Code string `json:"code"`
	}
	if err == nil && raw != nil {
		err = json.Unmarshal(raw, &args)
	}
	if err != nil || args.Code == "" {
		return fail("run_script needs a code argument: the script, as a string")
	}
	b := ts.script
	if b == nil { // a turn continued from a checkpoint: the run's tools
		b, _ = r.bind(ts.defs, ts)
	}
	out, err := r.code.Run(ctx, codemode.Script{Code: args.Code, Tools: b, Call: r.scriptCaller(c), Progress: c.Progress.Send,
		Hidden: func(server, tool string) error { return r.scriptHidden(ctx, c, server, tool) }})
	if err != nil {
		text := err.Error()
		if out.Printed != "" {
			text = "The script printed, before it stopped:\n" + out.Printed + "\n" + text
		}
		return fail(text)
	}
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Text: agents.Cut(out.Text(), r.maxBytes)}
}

// scriptCaller is the governed call a script of c makes.
func (r *llmRunner) scriptCaller(c *Call) codemode.Caller {
	return func(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
		if err := r.a.Quota(ctx); err != nil {
			return nil, err
		}
		relay, asked := codemode.NoInput()
		name := server + "." + tool
		_, res, d, err := r.governedCall(ctx, c, toolRef{server: server, tool: tool}, args, relay,
			func(res *mcp.CallToolResult, d policy.Decision, err error) llm.Message {
				switch {
				case !d.Allowed:
					return llm.Message{Role: llm.RoleTool, IsError: true, Text: fmt.Sprintf("tool %s is denied by policy (%s)", name, d.Reason)}
				case err != nil:
					return llm.Message{Role: llm.RoleTool, IsError: true, Text: fmt.Sprintf("tool %s failed: %v", name, err)}
				}
				return resultToMessage("", res, r.maxBytes)
			})
		if err := asked(); err != nil {
			return nil, err
		}
		if ctx.Err() != nil { // the script's end: the caller went away, or its time is up
			return nil, ctx.Err()
		}
		return scriptOutcome(server, tool, res, d, err)
	}
}

// scriptOutcome sorts a script's call: a refusal (policy, pins,
// credentials) stops the script; any other failure (the server is down or
// did not answer in its timeout) is the tool's error, a value the script
// can test.
func scriptOutcome(server, tool string, res *mcp.CallToolResult, d policy.Decision, err error) (*mcp.CallToolResult, error) {
	var cred *credentialsError
	switch {
	case !d.Allowed:
		return nil, fmt.Errorf("tool %q of server %q is denied by policy (%s)", tool, server, d.Reason)
	case err == nil:
		return res, nil
	case errors.Is(err, pins.ErrAwaitsApproval), errors.Is(err, pins.ErrRejected):
		return nil, err
	case errors.As(err, &cred):
		return nil, fmt.Errorf("no credentials for server %q: %w", server, err)
	}
	return mcp.NewToolResultError(fmt.Sprintf("tool %q of server %q failed: %v", tool, server, err)), nil
}

// scriptHidden says why a tool a script names is not among its tools:
// pins hide it (awaiting approval), or policy denies it to the caller (the
// refusal audited, as the tool loop's refuseHidden does); nil: no such
// tool.
func (r *llmRunner) scriptHidden(ctx context.Context, c *Call, server, tool string) error {
	if err := r.a.Downstream().Hidden(server, tool); err != nil {
		return err
	}
	if d := r.decision(c, server, tool); !d.Allowed {
		r.audit(ctx, c, server, tool, d, time.Now())
		return fmt.Errorf("tool %q of server %q is denied by policy (%s)", tool, server, d.Reason)
	}
	return nil
}
