package codemode

// One script's run: its thread, its builtins and the bounds they check.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// state is one script's run.
type state struct {
	ctx     context.Context
	lim     config.CodeMode
	s       Script
	thread  *starlark.Thread
	out     strings.Builder
	calls   int
	built   int  // bytes of the values built so far, in all
	holding bool // holds a cpu slot
	start   time.Time
}

func newState(ctx context.Context, lim config.CodeMode, s Script) *state {
	st := &state{ctx: ctx, lim: lim, s: s, start: time.Now()}
	st.thread = &starlark.Thread{Name: ToolName, OnMaxSteps: st.onSteps,
		Print: func(*starlark.Thread, string) {}} // print is a checked builtin (print)
	st.thread.SetMaxExecutionSteps(min(stepSlice, lim.MaxSteps))
	return st
}

// onSteps runs every stepSlice steps: it ends the script at max_steps,
// and otherwise lets other goroutines (and other scripts) run.
func (st *state) onSteps(t *starlark.Thread) {
	steps := t.ExecutionSteps()
	if steps >= st.lim.MaxSteps {
		t.Cancel(fmt.Sprintf("max_steps (%d) exceeded: the script ran too long (an endless loop?)", st.lim.MaxSteps))
		return
	}
	st.release()
	runtime.Gosched()
	if err := st.acquire(); err != nil {
		t.Cancel("stopped")
		return
	}
	t.SetMaxExecutionSteps(min(steps+stepSlice, st.lim.MaxSteps))
}

func (st *state) acquire() error {
	select {
	case cpu <- struct{}{}:
		st.holding = true
		return nil
	case <-st.ctx.Done():
		return st.ctx.Err()
	}
}

func (st *state) release() {
	if st.holding {
		st.holding = false
		<-cpu
	}
}

// stopped is the error of a script that ctx ended.
func (st *state) stopped(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		if time.Since(st.start) >= st.lim.Timeout {
			return &Error{Bound: "timeout", Msg: fmt.Sprintf("timeout (%s) exceeded after %d tool calls", st.lim.Timeout, st.calls), cause: err}
		}
		return &Error{Bound: "timeout", Msg: fmt.Sprintf("the call's deadline passed after %s and %d tool calls", elapsed(time.Since(st.start)), st.calls), cause: err}
	}
	return &Error{Msg: "canceled by the caller", cause: err}
}

// fail is the Error of a script that err ended, with the script's line.
func (st *state) fail(err error) error {
	line := 0
	var ee *starlark.EvalError
	msg := err.Error()
	if errors.As(err, &ee) {
		msg = ee.Msg
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if p := ee.CallStack[i].Pos; p.IsValid() && p.Filename() == "script.star" {
				line = int(p.Line)
				break
			}
		}
	}
	if cerr := st.ctx.Err(); cerr != nil {
		e := st.stopped(cerr).(*Error)
		e.Line = line
		return e
	}
	msg = strings.TrimPrefix(msg, "Starlark computation cancelled: ")
	for _, fn := range []string{fnAdd, fnMul, fnMod, fnOr, fnIAdd, fnMethod} {
		msg = strings.TrimPrefix(msg, fn+": ")
	}
	bound := boundOf(err)
	if strings.HasPrefix(msg, "max_steps (") {
		bound = "max_steps"
	}
	return &Error{Line: line, Bound: bound, Msg: msg, cause: errors.Unwrap(err)}
}

// charge counts a value of n bytes the script built.
func (st *state) charge(n int) error {
	if n > st.lim.MaxValueBytes {
		return bounded("max_value_bytes", "max_value_bytes (%d) exceeded: the value would take %d bytes", st.lim.MaxValueBytes, n)
	}
	st.built += n
	if total := 16 * st.lim.MaxValueBytes; st.built > total {
		return bounded("max_value_bytes", "max_value_bytes: the script has built %d bytes of values, over 16 x max_value_bytes (%d)", st.built, total)
	}
	return nil
}

// check refuses a value estimated at n bytes before it is built.
func (st *state) check(n float64) error {
	if n > float64(st.lim.MaxValueBytes) {
		return bounded("max_value_bytes", "max_value_bytes (%d) exceeded: the value would take %.0f bytes", st.lim.MaxValueBytes, n)
	}
	return nil
}

// keep charges z's own size when it is not small: small values are many
// steps apart, and max_steps bounds them.
func (st *state) keep(z starlark.Value, err error) (starlark.Value, error) {
	if err != nil {
		return nil, err
	}
	if n := ownSize(z); n >= 64 {
		if err := st.charge(n); err != nil {
			return nil, err
		}
	}
	return z, nil
}

// predeclared is what a script sees besides Starlark's universe: the
// servers, is_error, and the checked builtins.
func (st *state) predeclared() starlark.StringDict {
	d := starlark.StringDict{
		"is_error": starlark.NewBuiltin("is_error", isError),
		"print":    starlark.NewBuiltin("print", st.print),
		"fail":     st.failFn(),
		"str":      st.text("str"),
		"repr":     st.text("repr"),
		fnAdd:      st.binary(syntax.PLUS),
		fnMul:      st.binary(syntax.STAR),
		fnMod:      st.binary(syntax.PERCENT),
		fnOr:       st.binary(syntax.PIPE),
		fnIAdd:     starlark.NewBuiltin(fnIAdd, st.iadd),
		fnMethod:   starlark.NewBuiltin(fnMethod, st.method),
		fnLoop: starlark.NewBuiltin(fnLoop, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return args[0], nil
		}),
	}
	for _, name := range []string{"list", "tuple", "sorted", "reversed", "enumerate", "zip", "dict", "set"} {
		d[name] = st.sized(name)
	}
	if b := st.s.Tools; b != nil {
		for sid, tools := range b.servers {
			d[sid] = &namespace{st: st, sid: sid, server: b.names[sid], tools: tools}
		}
	}
	return d
}

// namespace is a server in a script: its tools are its attributes.
type namespace struct {
	st     *state
	sid    string
	server string // its name in the config
	tools  map[string]Tool
	fns    map[string]*starlark.Builtin
}

var _ starlark.HasAttrs = (*namespace)(nil)

func (n *namespace) String() string        { return "<server " + n.sid + ">" }
func (n *namespace) Type() string          { return "server" }
func (n *namespace) Freeze()               {}
func (n *namespace) Truth() starlark.Bool  { return true }
func (n *namespace) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: server") }
func (n *namespace) AttrNames() []string {
	names := make([]string, 0, len(n.tools))
	for k := range n.tools {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (n *namespace) Attr(name string) (starlark.Value, error) {
	t, ok := n.tools[name]
	if !ok {
		if h := n.st.s.Hidden; h != nil {
			if err := h(n.server, name); err != nil {
				return nil, &callError{label: n.sid + "." + name, err: err}
			}
		}
		names := n.AttrNames()
		if len(names) > 20 {
			names = append(names[:20], "...")
		}
		return nil, starlark.NoSuchAttrError(fmt.Sprintf("server %s has no tool %s you may call (its tools: %s)", n.sid, name, strings.Join(names, ", ")))
	}
	if fn := n.fns[name]; fn != nil {
		return fn, nil
	}
	if n.fns == nil {
		n.fns = map[string]*starlark.Builtin{}
	}
	label := n.sid + "." + name
	fn := starlark.NewBuiltin(label, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return n.st.callTool(label, t, args, kwargs)
	})
	n.fns[name] = fn
	return fn, nil
}

// callTool is one tool call of the script: arguments to JSON, the
// governed call, the result decoded.
func (st *state) callTool(label string, t Tool, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if st.calls >= st.lim.MaxToolCalls {
		return nil, bounded("max_tool_calls", "max_tool_calls (%d) reached: a script may call tools at most %d times", st.lim.MaxToolCalls, st.lim.MaxToolCalls)
	}
	var b bytes.Buffer
	switch {
	case len(args) == 1 && len(kwargs) == 0:
		if _, ok := args[0].(*starlark.Dict); !ok {
			return nil, fmt.Errorf("%s takes keyword arguments (or one dict), not a %s", label, args[0].Type())
		}
		if err := encodeJSON(&b, args[0], 0); err != nil {
			return nil, fmt.Errorf("%s: arguments: %w", label, err)
		}
	case len(args) > 0:
		return nil, fmt.Errorf("%s takes keyword arguments, e.g. %s(name=value)", label, label)
	default:
		b.WriteByte('{')
		for i, kv := range kwargs {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(&b, kv[0], 0); err != nil {
				return nil, err
			}
			b.WriteByte(':')
			if err := encodeJSON(&b, kv[1], 0); err != nil {
				return nil, fmt.Errorf("%s: argument %s: %w", label, kv[0], err)
			}
		}
		b.WriteByte('}')
	}
	if err := st.check(float64(b.Len())); err != nil {
		return nil, err
	}
	st.calls++
	if st.s.Progress != nil {
		st.s.Progress(fmt.Sprintf("step %d: %s", st.calls, label))
	}
	st.release()
	res, err := st.s.Call(st.ctx, t.Server, t.Name, b.Bytes())
	if aerr := st.acquire(); aerr != nil {
		return nil, aerr
	}
	if err != nil {
		return nil, &callError{label: label, err: err}
	}
	if res.ResultType == mcp.ResultTypeInputRequired {
		return nil, &callError{label: label, err: errInput}
	}
	v, n, err := resultValue(res)
	if err != nil {
		return nil, fmt.Errorf("%s: decoding its result: %w", label, err)
	}
	if err := st.charge(n); err != nil {
		return nil, err
	}
	return v, nil
}

// callError is a call the Caller refused or could not make: it stops the
// script.
type callError struct {
	label string
	err   error
}

func (e *callError) Error() string { return e.label + ": " + e.err.Error() }
func (e *callError) Unwrap() error { return e.err }
