package codemode

// The checked builtins: the operations of rewrite.go and the universe
// builtins that build a value in one step, each refusing a value past
// max_value_bytes (or output past max_output) before it is built.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

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
			return st.checkJoin(s, args)
		case "replace":
			return st.checkReplace(s, args)
		case "split", "rsplit", "splitlines":
			return st.checkSplit(s, name, args)
		case "format":
			return st.checkFormat(s, args, kwargs)
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

// checkJoin: the elements and a separator between each two.
func (st *state) checkJoin(s starlark.String, args starlark.Tuple) error {
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
	return nil
}

// checkReplace: each occurrence of old grown to new.
func (st *state) checkReplace(s starlark.String, args starlark.Tuple) error {
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
}

// checkSplit: one element per separator (a string of separators splits
// into many small strings, 32 bytes each).
func (st *state) checkSplit(s starlark.String, name string, args starlark.Tuple) error {
	sep := "\n"
	if name != "splitlines" {
		sep = " "
		if len(args) > 0 {
			if v, ok := args[0].(starlark.String); ok {
				sep = string(v)
			}
		}
	}
	if sep == "" {
		return nil // the method's own error
	}
	return st.check(float64(strings.Count(string(s), sep)+1) * 2 * elemCost)
}

// checkFormat: each replacement field at most the biggest argument.
func (st *state) checkFormat(s starlark.String, args starlark.Tuple, kwargs []starlark.Tuple) error {
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
		args = slices.Clone(args)
		for i, a := range args {
			l := length(a)
			if _, ok := a.(starlark.Iterable); ok && l < 0 {
				// An iterable of unknown length (codepoints()): taken in
				// here, element by element, within the bound.
				list, err := st.collect(a, per)
				if err != nil {
					return nil, err
				}
				args[i], l = list, length(list)
			}
			n = max(n, l*per)
		}
		if err := st.check(n); err != nil {
			return nil, err
		}
		return st.keep(starlark.Call(thread, orig, args, kwargs))
	})
}

// collect takes it's elements into a list, each counted at per bytes,
// refused past max_value_bytes.
func (st *state) collect(it starlark.Value, per float64) (*starlark.List, error) {
	iter := starlark.Iterate(it)
	defer iter.Done()
	var elems []starlark.Value
	var e starlark.Value
	for iter.Next(&e) {
		elems = append(elems, e)
		if err := st.check(float64(len(elems)) * per); err != nil {
			return nil, err
		}
	}
	return starlark.NewList(elems), nil
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
