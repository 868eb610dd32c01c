package arch

import (
	"go/ast"
	"go/token"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The static zeros of issue 41, read from the production sources. Each is a
// ratchet: the list of what is there today may only shrink. A new entry
// fails (the message says what to do instead); an entry that is gone fails
// too, until it is taken off its list, so that it cannot come back. Each
// list is to be empty when the work has landed.

var (
	sourceOnce sync.Once
	source     *Source
	sourceErr  error
)

func loadSource(t *testing.T) *Source {
	t.Helper()
	sourceOnce.Do(func() {
		root, err := Root()
		if err != nil {
			sourceErr = err
			return
		}
		source, sourceErr = LoadSource(root)
	})
	if sourceErr != nil {
		t.Fatal(sourceErr)
	}
	return source
}

// ratchet compares what was found with what is known today (both lists of
// sites, a site once per occurrence): what is new is an error with hint,
// what is gone an error asking to trim the list named list.
func ratchet(t *testing.T, list string, known, found []string, hint string) {
	t.Helper()
	left := slices.Clone(known)
	var added []string
	for _, f := range found {
		if i := slices.Index(left, f); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			added = append(added, f)
		}
	}
	for _, a := range added {
		t.Errorf("new: %s; %s", a, hint)
	}
	for _, l := range left {
		t.Errorf("gone: %s; take it off %s", l, list)
	}
	t.Logf("%d today (%s), target 0", len(found), list)
	for _, f := range found {
		t.Logf("  %s", f)
	}
}

// kindPackage reports whether the package in directory rel is a kind's
// (a kind family's package, under agents/kinds/).
func kindPackage(rel string) bool {
	return strings.HasPrefix(rel, "agents/kinds/")
}

// knownFuncFields are today's function-typed fields of a Host or of a
// kind's dependencies ("pkg.Struct.Field").
var knownFuncFields = []string{}

// No function-typed field in a struct named Host, or in a kind's
// dependencies (a struct named Deps or ending in Deps in a kind's
// package): what a kind needs of the gateway is a method of the one Host
// interface, not a closure handed in.
func TestNoFuncFieldsInHost(t *testing.T) {
	ratchet(t, "knownFuncFields", knownFuncFields, funcFields(loadSource(t)),
		"a kind reaches the gateway through a method of its Host interface, not a function-typed field")
}

// funcFields are the function-typed fields of the structs named Host and
// of kinds' dependencies: "pkg.Struct.Field".
func funcFields(s *Source) []string {
	var found []string
	for _, p := range s.Packages {
		for _, f := range p.Files {
			ast.Inspect(f.AST, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				name := ts.Name.Name
				if !ok || !(name == "Host" || kindPackage(p.Rel) && strings.HasSuffix(name, "Deps")) {
					return true
				}
				for _, fl := range st.Fields.List {
					if !s.IsFunc(p, f.AST, fl.Type) {
						continue
					}
					for _, id := range fl.Names {
						found = append(found, p.Rel+"."+name+"."+id.Name)
					}
				}
				return true
			})
		}
	}
	return found
}

// Type assertions of a downstream are checked by TestNoDownstreamTypeAssertion
// (downstream_test.go), which type-checks the packages.

// allowedContextAccessors are the exported context accessors that carry
// request-scoped data (identity, trace spans, the request id,
// deadline-like data), which may stay in the context: "pkg.Func".
var allowedContextAccessors = []string{
	"agents.RequestID", "agents.WithRequestID", // the request id
	"metrics/tracing.Active", "metrics/tracing.Context", "metrics/tracing.Inject", "metrics/tracing.Start", // trace spans
	"policy.CallerFrom", "policy.IdentityFrom", "policy.WithIdentity", // identity
	"agents/sessions.Caller", "agents/sessions.WithAgentID", "agents/sessions.WithInbound", // who the caller is: its session id, its agent_id
}

// knownContextAccessors are today's other exported context accessors:
// behaviour handed between packages in a context.
var knownContextAccessors = []string{}

// No exported context accessor outside allowedContextAccessors: an exported
// function that takes or returns a context.Context and puts a value in it
// or reads one out (context.WithValue, ctx.Value, ctxvalue.With or Of),
// itself or through a function of its package that does. What a call needs
// besides request-scoped data travels in the call value.
func TestNoContextAccessors(t *testing.T) {
	var found []string
	for _, a := range contextAccessorSites(loadSource(t)) {
		if !slices.Contains(allowedContextAccessors, a) {
			found = append(found, a)
		}
	}
	ratchet(t, "knownContextAccessors", knownContextAccessors, found,
		"hand behaviour to a call in the call value; a context carries only identity, trace, request id and deadlines (or add request-scoped data to allowedContextAccessors)")
}

// contextAccessorSites are the exported context accessors of every
// package: "pkg.Func".
func contextAccessorSites(s *Source) []string {
	var found []string
	for _, p := range s.Packages {
		if p.Rel == "agents/internal/ctxvalue" {
			continue // the means, not an accessor: its callers are
		}
		for _, name := range contextAccessors(s, p) {
			found = append(found, p.Rel+"."+name)
		}
	}
	return found
}

// contextAccessors are the exported functions (not methods) of p whose
// signature has a context.Context and that reach a context value, sorted.
func contextAccessors(s *Source, p *Package) []string {
	type fn struct {
		decl    *ast.FuncDecl
		file    *File
		touches bool
		calls   []string // same-package functions called by name
	}
	fns := map[string]*fn{}
	for _, f := range p.Files {
		imps := s.Imports(f.AST)
		for _, d := range f.AST.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv != nil {
				continue
			}
			x := &fn{decl: fd, file: f}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fun := call.Fun
				if ix, ok := fun.(*ast.IndexExpr); ok { // ctxvalue.Of[T](ctx)
					fun = ix.X
				}
				switch c := fun.(type) {
				case *ast.Ident:
					x.calls = append(x.calls, c.Name)
				case *ast.SelectorExpr:
					if id, ok := c.X.(*ast.Ident); ok {
						switch imps[id.Name] {
						case "context":
							x.touches = x.touches || c.Sel.Name == "WithValue"
							return true
						case Module + "/agents/internal/ctxvalue":
							x.touches = true
							return true
						}
					}
					if c.Sel.Name == "Value" && len(call.Args) == 1 {
						x.touches = true // ctx.Value(key)
					}
				}
				return true
			})
			fns[fd.Name.Name] = x
		}
	}
	for changed := true; changed; { // through the package's functions
		changed = false
		for _, x := range fns {
			for _, c := range x.calls {
				if y := fns[c]; y != nil && y.touches && !x.touches {
					x.touches, changed = true, true
				}
			}
		}
	}
	var out []string
	for name, x := range fns {
		if x.touches && token.IsExported(name) && hasContext(s, x.file, x.decl.Type) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// hasContext reports whether a function type takes or returns a
// context.Context.
func hasContext(s *Source, f *File, ft *ast.FuncType) bool {
	imps := s.Imports(f.AST)
	isCtx := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && imps[id.Name] == "context" && sel.Sel.Name == "Context"
	}
	for _, l := range []*ast.FieldList{ft.Params, ft.Results} {
		if l == nil {
			continue
		}
		for _, fl := range l.List {
			if isCtx(fl.Type) {
				return true
			}
		}
	}
	return false
}
