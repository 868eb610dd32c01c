package codemode

// One script's run: its thread, its builtins and the bounds they check.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

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

// ownSize is what v itself takes: a string's bytes, a container's elements
// (not what they refer to), an int's digits.
func ownSize(v starlark.Value) int {
	switch x := v.(type) {
	case starlark.String:
		return len(x)
	case starlark.Bytes:
		return len(x)
	case starlark.Int:
		return intBytes(x)
	case starlark.Sequence: // list, tuple, dict, set
		return x.Len() * elemCost
	}
	return 0
}

// length is len(v) as a float, -1 when v has none.
func length(v starlark.Value) float64 { return float64(starlark.Len(v)) }

// estimate is the size of x op y before it is built; ok false when the
// operation cannot grow.
func estimate(op syntax.Token, x, y starlark.Value) (float64, bool) {
	switch op {
	case syntax.PLUS:
		if _, ok := x.(starlark.Int); ok {
			return 0, false
		}
		if length(x) >= 0 && length(y) >= 0 {
			return (length(x) + length(y)) * unit(x), true
		}
	case syntax.STAR:
		xi, xInt := x.(starlark.Int)
		yi, yInt := y.(starlark.Int)
		switch {
		case xInt && yInt:
			return float64(xi.BigInt().BitLen()+yi.BigInt().BitLen()) / 8, true
		case yInt && length(x) >= 0:
			f, _ := starlark.AsFloat(yi)
			return length(x) * math.Max(f, 0) * unit(x), true
		case xInt && length(y) >= 0:
			f, _ := starlark.AsFloat(xi)
			return length(y) * math.Max(f, 0) * unit(y), true
		}
	case syntax.PIPE:
		if length(x) >= 0 && length(y) >= 0 {
			return (length(x) + length(y)) * elemCost, true
		}
	}
	return 0, false
}

// unit is what one element of v takes.
func unit(v starlark.Value) float64 {
	switch v.(type) {
	case starlark.String, starlark.Bytes:
		return 1
	}
	return elemCost
}

// binary is x op y, refused past max_value_bytes before it is built.
func (st *state) binary(op syntax.Token) *starlark.Builtin {
	return starlark.NewBuiltin(binaryFn[op], func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		if op == syntax.PERCENT {
			if f, ok := x.(starlark.String); ok {
				n, err := sizeOf(y, st.lim.MaxValueBytes)
				if err != nil {
					return nil, err
				}
				if err := st.check(float64(len(f) + n)); err != nil {
					return nil, err
				}
			}
		} else if n, ok := estimate(op, x, y); ok {
			if err := st.check(n); err != nil {
				return nil, err
			}
		}
		return st.keep(starlark.Binary(op, x, y))
	})
}

// iadd is x += y: a list is extended in place, as Starlark does.
func (st *state) iadd(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, y := args[0], args[1]
	l, ok := x.(*starlark.List)
	if !ok {
		return st.binary(syntax.PLUS).CallInternal(nil, args, nil)
	}
	if n := length(y); n >= 0 {
		if err := st.check((length(l) + n) * elemCost); err != nil {
			return nil, err
		}
	}
	var elems []starlark.Value // read first: y may be l itself
	iter := starlark.Iterate(y)
	if iter == nil {
		return nil, fmt.Errorf("unknown binary op: list += %s", y.Type())
	}
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
	}
	iter.Done()
	for _, e := range elems {
		if err := l.Append(e); err != nil {
			return nil, err
		}
	}
	return l, st.charge(len(elems) * elemCost)
}

// method is x.name(args...) for the methods that may grow (rewrite.go),
// refused past max_value_bytes before the value is built.
func (st *state) method(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	x, name, rest := args[0], string(args[1].(starlark.String)), args[2:]
	if err := st.checkMethod(x, name, rest, kwargs); err != nil {
		return nil, err
	}
	ha, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	fn, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, starlark.NoSuchAttrError(fmt.Sprintf("%s has no .%s field or method", x.Type(), name))
	}
	return st.keep(starlark.Call(thread, fn, rest, kwargs))
}

func (st *state) checkMethod(x starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	switch s := x.(type) {
	case starlark.String:
		switch name {
		case "join":
			if len(args) != 1 {
				return nil // the method's own error
			}
			n, count := 0.0, 0.0
			iter := starlark.Iterate(args[0])
			if iter == nil {
				return nil
			}
			defer iter.Done()
			var e starlark.Value
			for iter.Next(&e) {
				count++
				if es, ok := e.(starlark.String); ok {
					n += float64(len(es))
				}
				if err := st.check(n + count*float64(len(s))); err != nil {
					return err
				}
			}
		case "replace":
			if len(args) < 2 {
				return nil
			}
			old, ok1 := args[0].(starlark.String)
			nw, ok2 := args[1].(starlark.String)
			if !ok1 || !ok2 {
				return nil
			}
			occ := strings.Count(string(s), string(old))
			if old == "" {
				occ = utf8.RuneCountInString(string(s)) + 1
			}
			if len(args) > 2 {
				if c, err := starlark.AsInt32(args[2]); err == nil && c >= 0 {
					occ = min(occ, c)
				}
			}
			return st.check(float64(len(s)) + float64(occ)*float64(len(nw)-len(old)))
		case "format":
			biggest := 0
			for _, a := range args {
				n, err := sizeOf(a, st.lim.MaxValueBytes)
				if err != nil {
					return err
				}
				biggest = max(biggest, n)
			}
			for _, kv := range kwargs {
				n, err := sizeOf(kv[1], st.lim.MaxValueBytes)
				if err != nil {
					return err
				}
				biggest = max(biggest, n)
			}
			return st.check(float64(len(s)) + float64(strings.Count(string(s), "{"))*float64(biggest))
		}
	case *starlark.List:
		if name == "extend" && len(args) == 1 {
			if n := length(args[0]); n >= 0 {
				return st.check((length(s) + n) * elemCost)
			}
		}
	}
	return nil
}

// sized wraps a universe builtin that builds a container from an
// iterable in one step: refused past max_value_bytes before it runs.
func (st *state) sized(name string) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		n := float64(len(kwargs)) * 2 * elemCost
		per := float64(elemCost)
		if name == "zip" || name == "enumerate" {
			per = elemCost * float64(len(args)+2) // a tuple per element
		}
		for _, a := range args {
			if l := length(a); l >= 0 {
				n = max(n, l*per)
			}
		}
		if err := st.check(n); err != nil {
			return nil, err
		}
		return st.keep(starlark.Call(thread, orig, args, kwargs))
	})
}

// text wraps str and repr: the text's size is checked before it is built.
func (st *state) text(name string) *starlark.Builtin {
	orig := starlark.Universe[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 1 {
			n, err := sizeOf(args[0], st.lim.MaxValueBytes)
			if err != nil {
				return nil, err
			}
			if err := st.check(float64(n)); err != nil {
				return nil, err
			}
		}
		return st.keep(starlark.Call(thread, orig, args, kwargs))
	})
}

// print writes its arguments, separated by sep (default " "), and a
// newline to the output, within max_output.
func (st *state) print(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	sep := " "
	if err := starlark.UnpackArgs("print", nil, kwargs, "sep?", &sep); err != nil {
		return nil, err
	}
	room := st.lim.MaxOutput - st.out.Len()
	need := 0
	for _, a := range args {
		n, err := sizeOf(a, room)
		if err != nil {
			return nil, err
		}
		need += n + len(sep)
		if need > room+len(sep)*len(args)+2*len(args) {
			return nil, bounded("max_output", "max_output (%d bytes) exceeded by print", st.lim.MaxOutput)
		}
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteString(sep)
		}
		if s, ok := a.(starlark.String); ok {
			b.WriteString(string(s))
		} else {
			b.WriteString(a.String())
		}
	}
	b.WriteByte('\n')
	if st.out.Len()+b.Len() > st.lim.MaxOutput {
		return nil, bounded("max_output", "max_output (%d bytes) exceeded by print", st.lim.MaxOutput)
	}
	st.out.WriteString(b.String())
	return starlark.None, nil
}

// fail is Starlark's fail, its message checked like str's.
func (st *state) failFn() *starlark.Builtin {
	orig := starlark.Universe["fail"]
	return starlark.NewBuiltin("fail", func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		total := 0
		for _, a := range args {
			n, err := sizeOf(a, st.lim.MaxOutput)
			if err != nil {
				return nil, err
			}
			if total += n; total > st.lim.MaxOutput {
				return nil, bounded("max_output", "max_output (%d bytes) exceeded by fail's message", st.lim.MaxOutput)
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

func isError(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackPositionalArgs("is_error", args, kwargs, 1, &v); err != nil {
		return nil, err
	}
	_, ok := v.(*toolError)
	return starlark.Bool(ok), nil
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
