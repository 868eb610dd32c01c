package toolloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
)

// llmRunner is the llm kind: the tool loop.
type llmRunner struct {
	a        *agent
	model    agents.Model
	filter   policy.ToolFilter
	search   *modelSearch     // tool_search (search.go); nil: off
	code     *codemode.Runner // tool_mode code (codemode.go); nil: off
	maxIter  int
	maxBytes int
}

func (r *llmRunner) Run(ctx context.Context, c *Call) (string, error) {
	a := r.a
	model, err := r.model.For(c)
	if err != nil {
		return "", err
	}
	tools, problems := a.buildToolset(ctx, c.Inbound, r.filter, c.Caller)
	tools = narrow(c, tools)
	r.search.prepare(tools)
	msgs := append(append([]llm.Message{}, c.History...), llm.Message{Role: llm.RoleUser, Text: c.Message, Images: c.Images})
	system := c.SystemPrompt(a.Config.Instruction)
	if tools.search != nil {
		system = strings.TrimSpace(system + "\n\n" + fmt.Sprintf(searchNote, len(tools.defs)))
	}
	if len(problems) > 0 {
		system += "\n\nNote: " + strings.Join(problems, "; ")
	}
	var last string
	text := newTextStream(c.Progress, a.Name, a.Config.StreamText)
	iterations := 0
	// One observation per run: the number of model turns it took.
	defer func() { a.Metrics().AgentIterations.Observe(float64(iterations)) }()
	resumed, err := resumeOf(ctx, c) // resume.go
	if err != nil {
		return "", err
	}
	first := 1
	if resumed != nil {
		first, msgs = resumed.Iter, resumed.Msgs
	}
	for i := first; i <= r.maxIter; i++ {
		iterations = i
		var calls []llm.ToolCall
		var done map[int]llm.Message
		again := resumed != nil && i == first
		if again { // the model asked for these before the input-required round
			turn := msgs[len(msgs)-1]
			calls, done, last = turn.ToolCalls, resumed.Done, turn.Text
		} else {
			c.Progress.Send(fmt.Sprintf("%s step %d (llm)", a.Name, i))
			resp, err := model.Chat(ctx, llm.Request{System: system, Messages: msgs, Tools: r.modelTools(tools, msgs), OnText: text.onText(), Schema: c.Schema()}, c)
			text.flush()
			if err != nil {
				return "", err
			}
			if len(resp.ToolCalls) == 0 {
				return resp.Text, nil
			}
			last = resp.Text
			if i == r.maxIter {
				break
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
			calls = resp.ToolCalls
		}
		cp := checkpointTurn(ctx, c, i, msgs, done, again)
		c.Progress.Send(fmt.Sprintf("%s step %d (tool)", a.Name, i))
		msgs = append(msgs, r.runTools(ctx, c, tools, calls, done, cp)...)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if c.Depth == 0 && c.Unanswered() {
			// The caller was asked for input and never answered: nobody
			// will read this run's answer, so no more model turns.
			return "", agents.ErrUnanswered
		}
	}
	a.Metrics().AgentIterationLimit.WithLabelValues(a.Name).Inc()
	note := fmt.Sprintf("Iteration limit reached: %s stopped after %d model turns without a final answer.", a.Name, r.maxIter)
	if last != "" {
		note += "\n\n" + last
	}
	return note, nil
}

// runTools runs the model's tool calls in parallel; every outcome, including
// unknown and denied tools, becomes a tool result for the model. Those in
// done (by position) have finished before, in an earlier input-required
// round, and are not run again; cp (may be nil) records each result.
func (r *llmRunner) runTools(ctx context.Context, c *Call, ts *toolset, calls []llm.ToolCall, done map[int]llm.Message, cp *turnCheckpoint) []llm.Message {
	out := make([]llm.Message, len(calls))
	run := func(i int, tc llm.ToolCall) {
		if m, ok := done[i]; ok {
			out[i] = m
			return
		}
		defer r.a.Recover(c.RequestID, "tool call "+tc.Name, func(err error) {
			out[i] = llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: err.Error()}
		})
		tcall := c
		if cp != nil {
			// The caller's input requests name the tool call they are for.
			tcall = c.Scoped("tool" + strconv.Itoa(i+1) + "-")
		}
		out[i] = r.runTool(ctx, tcall, ts, tc)
		cp.finished(i, out[i])
	}
	if len(calls) == 1 {
		// The common turn: one tool call, run on this goroutine. A new
		// goroutine would start on a small stack and grow it by copying
		// (about 3% of the agent loop's CPU, P16).
		run(0, calls[0])
		return out
	}
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(i, tc)
		}()
	}
	wg.Wait()
	return out
}

func (r *llmRunner) runTool(ctx context.Context, c *Call, ts *toolset, tc llm.ToolCall) llm.Message {
	fail := func(format string, args ...any) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: fmt.Sprintf(format, args...)}
	}
	if searching(ts, tc) {
		return r.searchTools(ctx, c, ts, tc)
	}
	if r.code != nil && tc.Name == codemode.ToolName {
		return r.runScript(ctx, c, ts, tc)
	}
	ref, ok := ts.refs[tc.Name]
	if !ok {
		// A tool hidden by policy is refused as denied (and audited), not
		// reported as unknown, so neither the model nor the operator is misled.
		if m, denied := r.refuseHidden(ctx, c, tc); denied {
			return m
		}
		return fail("unknown tool %q: use one of the tools offered", tc.Name)
	}
	args, err := objectArguments(tc.Arguments)
	if err != nil {
		return fail("tool %s: arguments are not a JSON object: %v", tc.Name, err)
	}
	if ref.agent != "" {
		return r.callAgent(ctx, c, ref.agent, tc, args)
	}
	return r.callServer(ctx, c, ref, tc, args)
}

// objectArguments checks that a tool call's arguments are a JSON object (or
// absent, or null: no arguments) and returns them as they are, or nil. An
// object with invalid UTF-8 comes back as encoding/json reads it (invalid
// bytes replaced), as the downstream would have got it through mcp-go.
func objectArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON white space only
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] == '{' && utf8.Valid(raw) && json.Valid(raw):
		return raw, nil
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, err
	}
	return json.Marshal(args)
}

func (r *llmRunner) callServer(ctx context.Context, c *Call, ref toolRef, tc llm.ToolCall, args json.RawMessage) llm.Message {
	msg, _, _, _ := r.governedCall(ctx, c, ref, args, r.a.Requests(c), func(res *mcp.CallToolResult, d policy.Decision, err error) llm.Message {
		switch {
		case !d.Allowed:
			return deniedResult(tc, d)
		case err != nil:
			return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: fmt.Sprintf("tool %s failed: %v", tc.Name, err)}
		}
		return resultToMessage(tc.ID, res, r.maxBytes)
	})
	return msg
}

// governedCall is one call of a downstream tool as the agent makes it, for
// the tool loop and for a script (codemode.go): the caller's and the
// agent's tool rules (a denial comes back as d, not called), the outbound
// headers with the caller's credentials, the call on callCtx (the
// downstream's span and metrics are the client's), progress and one audit
// line. toMsg makes the tool message its progress and audit line report.
func (r *llmRunner) governedCall(ctx context.Context, c *Call, ref toolRef, args json.RawMessage, relay *mcpclient.Relay,
	toMsg func(*mcp.CallToolResult, policy.Decision, error) llm.Message) (msg llm.Message, res *mcp.CallToolResult, d policy.Decision, err error) {
	a := r.a
	label := ref.server + "/" + ref.tool
	start := time.Now()
	// Checked again at call time: the rules may differ per caller.
	d = r.decision(c, ref.server, ref.tool)
	if !d.Allowed {
		r.audit(ctx, c, ref.server, ref.tool, d, start)
		return toMsg(nil, d, nil), nil, d, nil
	}
	audit := policy.AuditEvent{RequestID: c.RequestID, Caller: c.Caller, Agent: r.a.Name, Server: ref.server, Tool: ref.tool, Decision: d}
	defer func() {
		audit.Latency = time.Since(start)
		r.a.Auditor().Record(ctx, audit)
	}()
	c.Progress.SendTool(label+": started", func() map[string]any {
		return map[string]any{"server": ref.server, "tool": ref.tool, "arguments": args}
	})
	reporter := c.Progress.Prefixed(label + ": ")
	onProgress := func(progress float64, total *float64, msg string) {
		reporter.Send(downstreamProgress(progress, total, msg))
	}
	// relay: a server with oauth may ask the caller to connect, relayed
	// like the downstream's own requests (upstream.go).
	hdr, err := a.Outbound(ctx, ref.server, c.Inbound, relay)
	if err != nil {
		err = &credentialsError{err}
	} else {
		res, err = a.callTool(ctx, ref.server, ref.tool, args, hdr, onProgress, mcpclient.CallOptions{Relay: relay, Extras: c.Extras()})
	}
	if err != nil {
		a.Rejected(ctx, ref.server, err)
		audit.Outcome = policy.AuditOutcome(mcpclient.Outcome(err))
		a.Log.Warn("downstream tool failed", zap.String("request_id", c.RequestID), zap.String("server", ref.server),
			zap.String("tool", ref.tool), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err), tracing.LogField(ctx))
		msg = toMsg(nil, d, err)
		c.Progress.SendTool(label+": failed", toolOutcome(ref, msg))
		return msg, nil, d, err
	}
	audit.Outcome = policy.OutcomeAllow
	outcome := ": completed"
	if res.IsError {
		audit.Outcome = policy.OutcomeError
		outcome = ": failed"
	}
	msg = toMsg(res, d, nil)
	c.Progress.SendTool(label+outcome, toolOutcome(ref, msg))
	audit.ResultBytes = messageBytes(msg)
	return msg, res, d, nil
}

// credentialsError is a call whose outbound headers (the caller's
// credentials for the server) could not be composed; it reads as its
// cause.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// toolDetailResult is how much of a tool's result text a detailed
// progress notification carries.
const toolDetailResult = 2048

// toolOutcome is the detail of a finished downstream call's progress
// (Reporter.SendTool): the start of the result as the model gets it.
func toolOutcome(ref toolRef, msg llm.Message) func() map[string]any {
	return func() map[string]any {
		text, truncated := msg.Text, false
		if len(text) > toolDetailResult {
			text, truncated = strings.ToValidUTF8(text[:toolDetailResult], ""), true
		}
		d := map[string]any{"server": ref.server, "tool": ref.tool, "isError": msg.IsError, "result": text}
		if truncated {
			d["truncated"] = true
		}
		if len(msg.Images) > 0 {
			d["images"] = len(msg.Images)
		}
		return d
	}
}

// messageBytes is the size of a tool result as the model gets it: its text
// and its images' bytes.
func messageBytes(m llm.Message) int {
	n := len(m.Text)
	for _, img := range m.Images {
		n += len(img.Data)
	}
	return n
}

// callTool is one tools/call of a downstream tool for the tool loop, with
// opts' relay and the caller's members. With the wire switch off
// (wire.Fast) it goes through mcp-go's client, which adds no members.
func (a *agent) callTool(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcp.CallToolResult, error) {
	if wire.Fast() { // the arguments as the model gave them (test/bench/README.md P17)
		return a.Downstream().CallToolJSON(ctx, server, tool, args, hdr, onProgress, opts)
	}
	var m map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, err
		}
	}
	return a.Downstream().CallTool(ctx, server, tool, m, hdr, onProgress, mcpclient.CallOptions{Relay: opts.Relay})
}

// downstreamProgress is the text relayed for one downstream progress
// notification: its message, or, since the message is optional (the
// reference server-everything sends none), its counter as "progress i/n".
func downstreamProgress(progress float64, total *float64, msg string) string {
	if msg != "" {
		return msg
	}
	if total != nil && *total > 0 {
		return fmt.Sprintf("progress %g/%g", progress, *total)
	}
	return fmt.Sprintf("progress %g", progress)
}

func (r *llmRunner) decision(c *Call, server, tool string) policy.Decision {
	d := r.a.Callers().AllowTool(c.Caller, server, tool)
	if !d.Allowed {
		return d
	}
	switch fd := r.filter.Decide(server + "__" + tool); {
	case !fd.Allowed:
		fd.Reason = policy.ReasonToolDenied
		return fd
	case d.Rule == "":
		return fd
	}
	return d
}

func (r *llmRunner) audit(ctx context.Context, c *Call, server, tool string, d policy.Decision, start time.Time) {
	r.a.Auditor().Record(ctx, policy.AuditEvent{RequestID: c.RequestID, Caller: c.Caller, Agent: r.a.Name,
		Server: server, Tool: tool, Decision: d, Latency: time.Since(start)})
}

// refuseHidden handles a call of a name that was not offered but names a
// tool of one of the agent's servers (<server>__<tool>): when policy denies
// that tool, the call is refused as denied. It never calls the downstream.
func (r *llmRunner) refuseHidden(ctx context.Context, c *Call, tc llm.ToolCall) (llm.Message, bool) {
	for _, srv := range r.a.Config.Servers {
		tool, ok := strings.CutPrefix(tc.Name, config.SanitizeToolName(srv)+"__")
		if !ok || tool == "" {
			continue
		}
		if d := r.decision(c, srv, tool); !d.Allowed {
			r.audit(ctx, c, srv, tool, d, time.Now())
			return deniedResult(tc, d), true
		}
	}
	return llm.Message{}, false
}

func deniedResult(tc llm.ToolCall, d policy.Decision) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: fmt.Sprintf("tool %s is denied by policy (%s)", tc.Name, d.Reason)}
}

func (r *llmRunner) callAgent(ctx context.Context, c *Call, name string, tc llm.ToolCall, args json.RawMessage) llm.Message {
	sub := r.a.Agent(name)
	label := name + "/" + sub.Config.ToolName
	var in map[string]any
	_ = json.Unmarshal(args, &in) // an object or nil (objectArguments)
	msg, _ := in["message"].(string)
	if msg == "" {
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: "agent " + name + " needs a non-empty message argument"}
	}
	c.Progress.Send(label + ": started")
	answer, err := sub.Run(ctx, c.Sub(msg, c.Progress.Prefixed(label+": ")))
	if err != nil {
		c.Progress.Send(label + ": failed")
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: fmt.Sprintf("agent %s failed: %v", name, err)}
	}
	c.Progress.Send(label + ": completed")
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Text: agents.Cut(answer, r.maxBytes)}
}

func newLLMRunner(a *agent) (*llmRunner, error) {
	m, err := a.Model()
	if err != nil {
		return nil, err
	}
	f, err := policy.NewToolFilter(a.Config.Tools.Allow, a.Config.Tools.Deny)
	if err != nil {
		return nil, err
	}
	f.Name = "agents." + a.Name + ".tools"
	emb, vecs := a.SearchEmbeddings()
	s, err := newModelSearch(a.Config.ToolSearch, emb, vecs)
	if err != nil {
		return nil, err
	}
	r := &llmRunner{a: a, model: m, filter: f, search: s, maxIter: a.Config.MaxIterations, maxBytes: a.Gateway().Limits.MaxToolResultBytes}
	if a.Config.ToolMode == config.ToolModeCode {
		if err := codemode.CheckServers(a.Config.Servers); err != nil {
			return nil, err
		}
		r.code = codemode.NewRunner(a.Config.CodeMode)
	}
	return r, nil
}
