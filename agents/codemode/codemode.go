// Package codemode runs run_script: a short Starlark program
// (go.starlark.net) in which each tool the caller may use is a function
// server.tool(**args). One script replaces a model round trip per tool
// call: it calls, loops and filters, and returns only what it prints and
// the global result.
//
// It owns the interpreter, the names the tools take in a script
// (names.go, the rule itself in config.ScriptName), the conversion of
// arguments and results (values.go) and the bounds (guard.go, with the
// checked operations of rewrite.go and builtins.go): max_steps,
// max_tool_calls, timeout, max_output, max_value_bytes and
// max_concurrent, each named in the error that reports it. It makes no
// tool call itself: every call goes to the Caller it is handed, which is
// the agent's governed path (caller rules, pins, quotas, credentials,
// audit, metrics). It must not give a script files, the network, the
// clock or load: a script sees Starlark's universe (some of it checked),
// its servers and is_error, nothing else.
package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// ToolName is the tool that runs a script.
const ToolName = "run_script"

// Schema is run_script's input schema.
const Schema = `{"type":"object","properties":{"code":{"type":"string","description":"A Starlark (Python-like) script. Call tools as server.tool(name=value, ...); print what you need and/or set the global result."}},"required":["code"],"additionalProperties":false}`

// Caller makes one governed call of a tool for a script. A result with
// IsError is the tool's own error: the script gets it as a value it can
// test (a Caller turns a failure the script may act on, such as a server
// that does not answer, into one). An error is a refusal (policy, pins,
// quota, a missing connection, a tool asking for input): it stops the
// script, and the script's error wraps it.
type Caller func(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error)

// Runner runs the scripts of one agent within its limits.
type Runner struct {
	lim     config.CodeMode
	running atomic.Int32 // scripts running now (max_concurrent)
}

// NewRunner returns the runner of an agent whose code_mode is lim
// (defaults applied by the config loader; zero fields take the defaults
// here too, for callers that build a config by hand).
func NewRunner(lim config.CodeMode) *Runner {
	lim.ApplyDefaults(config.DefaultAgentTimeout)
	return &Runner{lim: lim}
}

// Limits are the runner's bounds.
func (r *Runner) Limits() config.CodeMode { return r.lim }

// Script is one run_script call.
type Script struct {
	Code  string
	Tools *Bindings
	Call  Caller
	// Progress, when set, is told each call as it starts:
	// "step 3: server.tool".
	Progress func(msg string)
	// Hidden, when set, says why a tool the script names is not callable
	// (the pins hide it: it awaits approval), or nil.
	Hidden func(server, tool string) error
}

// Output is what a script made: what it printed and its global result
// (JSON; nil when unset or None).
type Output struct {
	Printed string
	Result  json.RawMessage
	Calls   int
	Steps   uint64
}

// Text is the output as a model reads it: the printed text, then
// "result: <json>".
func (o Output) Text() string {
	var b strings.Builder
	b.WriteString(o.Printed)
	if o.Result != nil {
		if b.Len() > 0 && !strings.HasSuffix(o.Printed, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("result: ")
		b.Write(o.Result)
	}
	if b.Len() == 0 {
		return "(the script printed nothing and set no result)"
	}
	return b.String()
}

// Error is a script that failed: where (Line, 0 when unknown), which
// bound stopped it (Bound, "" when none) and what went wrong. It wraps
// the cause (a Caller's refusal, the context's error).
type Error struct {
	Line  int
	Bound string
	Msg   string
	cause error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("run_script: line %d: %s", e.Line, e.Msg)
	}
	return "run_script: " + e.Msg
}

func (e *Error) Unwrap() error { return e.cause }

// boundError is a bound a script hit, named in its message.
type boundError struct {
	bound string
	msg   string
}

func (e *boundError) Error() string { return e.msg }

func bounded(bound, format string, args ...any) *boundError {
	return &boundError{bound: bound, msg: fmt.Sprintf(format, args...)}
}

// cpu is how many scripts may execute Starlark at once in the process:
// half the cores (at least one), so that scripts spinning until their
// bounds leave the rest of the gateway a core. A script gives its slot up
// while a tool call runs, and every stepSlice steps.
var cpu = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// stepSlice is how many steps a script runs between yields.
const stepSlice = 4096

// Run runs s. The script stops at the first bound it hits, at a refusal,
// or when ctx ends (the tool call running then ends with it).
func (r *Runner) Run(ctx context.Context, s Script) (Output, error) {
	if n := r.running.Add(1); int(n) > r.lim.MaxConcurrent {
		r.running.Add(-1)
		return Output{}, &Error{Bound: "max_concurrent", Msg: fmt.Sprintf(
			"max_concurrent (%d) scripts of this agent are running already; try again when one has finished", r.lim.MaxConcurrent)}
	}
	defer r.running.Add(-1)
	ctx, span := tracing.Start(ctx, trace.SpanKindInternal, "execute_tool", ToolName)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.GenAIOperation.String("execute_tool"), tracing.GenAIToolName.String(ToolName))
	}
	ctx, cancel := context.WithTimeout(ctx, r.lim.Timeout)
	defer cancel()
	out, err := r.run(ctx, s)
	tracing.Fail(span, err, "script_error")
	return out, err
}

func (r *Runner) run(ctx context.Context, s Script) (Output, error) {
	st := newState(ctx, r.lim, s)
	f, err := fileOptions.Parse("script.star", s.Code, 0)
	if err != nil {
		return Output{}, syntaxError(err)
	}
	if err := rewrite(f); err != nil {
		return Output{}, syntaxError(err)
	}
	predeclared := st.predeclared()
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return Output{}, syntaxError(err)
	}
	if err := st.acquire(); err != nil {
		return Output{}, st.stopped(err)
	}
	stop := context.AfterFunc(ctx, func() { st.thread.Cancel("stopped") })
	globals, err := prog.Init(st.thread, predeclared)
	stop()
	st.release()
	out := Output{Printed: st.out.String(), Calls: st.calls, Steps: st.thread.ExecutionSteps()}
	if err != nil {
		return out, st.fail(err)
	}
	if v, ok := globals["result"]; ok && v != starlark.None {
		var buf bytes.Buffer
		err := encodeJSON(&buf, v, 0)
		b := buf.Bytes()
		if err != nil {
			return out, &Error{Msg: "result: " + err.Error(), Bound: boundOf(err), cause: err}
		}
		if len(out.Printed)+len(b) > r.lim.MaxOutput {
			return out, &Error{Bound: "max_output", Msg: fmt.Sprintf("max_output (%d bytes) exceeded: the result is %d bytes", r.lim.MaxOutput, len(b))}
		}
		out.Result = b
	}
	return out, nil
}

var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

// syntaxError is a script that does not parse or resolve, with its line.
func syntaxError(err error) error {
	var se syntax.Error
	if errors.As(err, &se) {
		return &Error{Line: int(se.Pos.Line), Msg: "syntax error: " + se.Msg}
	}
	var el resolve.ErrorList
	if errors.As(err, &el) && len(el) > 0 {
		return &Error{Line: int(el[0].Pos.Line), Msg: el[0].Msg}
	}
	return &Error{Msg: err.Error()}
}

// boundOf is the bound err names, or "".
func boundOf(err error) string {
	var be *boundError
	if errors.As(err, &be) {
		return be.bound
	}
	return ""
}

// elapsed rounds d for messages.
func elapsed(d time.Duration) string { return d.Round(time.Millisecond).String() }
