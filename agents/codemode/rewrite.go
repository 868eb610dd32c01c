package codemode

// go.starlark.net accounts no memory: one step of `s = s + s` doubles a
// string, and 40 such steps ask for a terabyte. Before a script is
// compiled, every operation of its syntax tree that can build a value
// bigger than its operands is turned into a call of a checked builtin
// (guard.go), which refuses a value past max_value_bytes before building
// it: the binary operators + * % | (and += *= %=), and the methods join,
// replace, format, extend and split (rsplit, splitlines). The calls keep the operators' positions, so
// errors name the script's lines. Everything else a script can reach that
// builds in one step (list(), sorted(), str(), print(), ...) is a checked
// builtin itself; what is left grows by one element a step and is bounded
// by max_steps.

import (
	"strconv"

	"go.starlark.net/syntax"
)

// grown are the methods whose result may outgrow their operands.
var grown = map[string]bool{"join": true, "replace": true, "format": true, "extend": true, "split": true, "rsplit": true, "splitlines": true}

// Names of the checked builtins the rewrite calls.
const (
	fnAdd    = "_cm_add"
	fnMul    = "_cm_mul"
	fnMod    = "_cm_mod"
	fnOr     = "_cm_or"
	fnIAdd   = "_cm_iadd"
	fnMethod = "_cm_method"
	fnLoop   = "_cm_loop"
)

var binaryFn = map[syntax.Token]string{syntax.PLUS: fnAdd, syntax.STAR: fnMul, syntax.PERCENT: fnMod, syntax.PIPE: fnOr}

// augFn is the builtin of an augmented assignment; += extends a list in
// place as Starlark does.
var augFn = map[syntax.Token]string{syntax.PLUS_EQ: fnIAdd, syntax.STAR_EQ: fnMul, syntax.PERCENT_EQ: fnMod}

// rewrite turns f's growing operations into checked calls, and refuses
// load.
func rewrite(f *syntax.File) error {
	for _, s := range f.Stmts {
		if l, ok := s.(*syntax.LoadStmt); ok {
			return syntax.Error{Pos: l.Load, Msg: "load is not available in run_script"}
		}
	}
	f.Stmts = stmts(f.Stmts)
	return nil
}

func stmts(list []syntax.Stmt) []syntax.Stmt {
	for i, s := range list {
		list[i] = stmt(s)
	}
	return list
}

func stmt(s syntax.Stmt) syntax.Stmt {
	switch x := s.(type) {
	case *syntax.AssignStmt:
		x.RHS = expr(x.RHS)
		if fn, ok := augFn[x.Op]; ok {
			// x op= y  →  x = fn(x, y). The target is read again: an index
			// or attribute target's operand expressions run twice.
			x.RHS = call(fn, x.OpPos, readOf(x.LHS), x.RHS)
			x.Op = syntax.EQ
		} else if x.Op == syntax.EQ {
			x.LHS = target(x.LHS)
		}
	case *syntax.DefStmt:
		x.Params = params(x.Params)
		x.Body = stmts(x.Body)
	case *syntax.ExprStmt:
		x.X = expr(x.X)
	case *syntax.ForStmt:
		x.X = expr(x.X)
		x.Vars = target(x.Vars)
		x.Body = stmts(x.Body)
	case *syntax.WhileStmt:
		// while c  →  while _cm_loop(c): a loop whose body cannot fail
		// records no position, and its max_steps error would name line 1.
		x.Cond = call(fnLoop, x.While, expr(x.Cond))
		x.Body = stmts(x.Body)
	case *syntax.IfStmt:
		x.Cond = expr(x.Cond)
		x.True = stmts(x.True)
		x.False = stmts(x.False)
	case *syntax.ReturnStmt:
		if x.Result != nil {
			x.Result = expr(x.Result)
		}
	}
	return s
}

// target rewrites the operands inside an assignment target (a[i+1] = v),
// never the target itself.
func target(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.IndexExpr:
		x.X, x.Y = expr(x.X), expr(x.Y)
	case *syntax.DotExpr:
		x.X = expr(x.X)
	case *syntax.TupleExpr:
		for i, t := range x.List {
			x.List[i] = target(t)
		}
	case *syntax.ListExpr:
		for i, t := range x.List {
			x.List[i] = target(t)
		}
	case *syntax.ParenExpr:
		x.X = target(x.X)
	}
	return e
}

// params rewrites default values (name=default), not the names.
func params(ps []syntax.Expr) []syntax.Expr {
	for _, p := range ps {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = expr(b.Y)
		}
	}
	return ps
}

func exprs(list []syntax.Expr) []syntax.Expr {
	for i, e := range list {
		list[i] = expr(e)
	}
	return list
}

func expr(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.BinaryExpr:
		x.X, x.Y = expr(x.X), expr(x.Y)
		if fn, ok := binaryFn[x.Op]; ok {
			return call(fn, x.OpPos, x.X, x.Y)
		}
	case *syntax.CallExpr:
		x.Args = callArgs(x.Args)
		if d, ok := x.Fn.(*syntax.DotExpr); ok && grown[d.Name.Name] {
			name := &syntax.Literal{Token: syntax.STRING, TokenPos: d.NamePos, Raw: strconv.Quote(d.Name.Name), Value: d.Name.Name}
			x.Args = append([]syntax.Expr{expr(d.X), name}, x.Args...)
			x.Fn = &syntax.Ident{NamePos: d.NamePos, Name: fnMethod}
			return x
		}
		x.Fn = expr(x.Fn)
	case *syntax.Comprehension:
		x.Body = expr(x.Body)
		for _, c := range x.Clauses {
			switch cl := c.(type) {
			case *syntax.ForClause:
				cl.X = expr(cl.X)
				cl.Vars = target(cl.Vars)
			case *syntax.IfClause:
				cl.Cond = expr(cl.Cond)
			}
		}
	case *syntax.CondExpr:
		x.Cond, x.True, x.False = expr(x.Cond), expr(x.True), expr(x.False)
	case *syntax.DictEntry:
		x.Key, x.Value = expr(x.Key), expr(x.Value)
	case *syntax.DictExpr:
		x.List = exprs(x.List)
	case *syntax.DotExpr:
		x.X = expr(x.X)
	case *syntax.IndexExpr:
		x.X, x.Y = expr(x.X), expr(x.Y)
	case *syntax.LambdaExpr:
		x.Params = params(x.Params)
		x.Body = expr(x.Body)
	case *syntax.ListExpr:
		x.List = exprs(x.List)
	case *syntax.ParenExpr:
		x.X = expr(x.X)
	case *syntax.SliceExpr:
		x.X = expr(x.X)
		for _, p := range []*syntax.Expr{&x.Lo, &x.Hi, &x.Step} {
			if *p != nil {
				*p = expr(*p)
			}
		}
	case *syntax.TupleExpr:
		x.List = exprs(x.List)
	case *syntax.UnaryExpr:
		if x.X != nil {
			x.X = expr(x.X)
		}
	}
	return e
}

// callArgs rewrites a call's arguments: name=value keeps its name.
func callArgs(args []syntax.Expr) []syntax.Expr {
	for i, a := range args {
		if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = expr(b.Y)
			continue
		}
		args[i] = expr(a)
	}
	return args
}

// readOf is a copy of an assignment target to read it with: the
// resolver records a binding in each node it visits.
func readOf(e syntax.Expr) syntax.Expr {
	switch x := e.(type) {
	case *syntax.Ident:
		return &syntax.Ident{NamePos: x.NamePos, Name: x.Name}
	case *syntax.IndexExpr:
		c := *x
		return &c
	case *syntax.DotExpr:
		c := *x
		return &c
	}
	return e
}

func call(fn string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: fn}, Lparen: pos, Args: args, Rparen: pos}
}
