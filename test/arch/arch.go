// Package arch measures the shape of the gateway's production code for the
// tests that hold it (issue 41's "Must hold"): the import graph of the
// project's packages, read from their sources (go/build, no tooling outside
// the standard library), the goroutine stacks a test records, and the
// climbs in them: a call from a package P into a package Q that imports P,
// back up the one direction imports point. Its tests (arch_test.go) check
// the production sources for what must go to zero. TestCallPath in package
// gateway records the stacks of one proxied tools/call and counts their
// climbs with this package, also in a build whose sources Overlay rewrites
// so that every function records its stack on entry (package probe). It
// reads sources only and imports nothing of the gateway.
package arch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the project's module path: the packages whose frames count.
const Module = "github.com/pallasgw/pallasgw"

// Root is the module's directory: the nearest directory above the working
// directory (where `go test` runs a package's tests) holding go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}

// Production reports whether the directory rel (slash-separated, relative
// to the root) holds production code: not test/, not testdata, not a
// hidden or tool directory.
func Production(rel string) bool {
	if rel == "test" || strings.HasPrefix(rel, "test/") {
		return false
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "testdata" || strings.HasPrefix(part, ".") || strings.HasPrefix(part, "_") || part == "node_modules" {
			return false
		}
	}
	return true
}

// Graph is the project's production packages and what each imports of the
// project (test files left out), by import path.
type Graph struct {
	Imports map[string][]string
	deps    map[string]map[string]bool // memo of Deps
}

// LoadGraph reads the package clause and imports of every production
// package under root.
func LoadGraph(root string) (*Graph, error) {
	g := &Graph{Imports: map[string][]string{}, deps: map[string]map[string]bool{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && !Production(rel) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, build.ImportComment)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		ip := Module
		if rel != "." {
			ip += "/" + rel
		}
		var own []string
		for _, imp := range p.Imports {
			if imp == Module || strings.HasPrefix(imp, Module+"/") {
				own = append(own, imp)
			}
		}
		g.Imports[ip] = own
		return nil
	})
	return g, err
}

// Deps is every project package pkg imports, directly or not.
func (g *Graph) Deps(pkg string) map[string]bool {
	if d, ok := g.deps[pkg]; ok {
		return d
	}
	d := map[string]bool{}
	g.deps[pkg] = d // a cycle (there is none: Go forbids it) ends here
	for _, imp := range g.Imports[pkg] {
		d[imp] = true
		for dd := range g.Deps(imp) {
			d[dd] = true
		}
	}
	return d
}

// Climbs reports whether a call from package from into package to goes
// back up: to imports from, directly or not.
func (g *Graph) Climbs(from, to string) bool { return from != to && g.Deps(to)[from] }

// Frame is one frame of a recorded stack.
type Frame struct {
	Func string // as the runtime names it: path/pkg.(*T).Method.func1
	File string
	Line int
}

// Package is the import path of the package fr's function belongs to.
func (fr Frame) Package() string { return FuncPackage(fr.Func) }

// Short is the function's name without the module path.
func (fr Frame) Short() string { return strings.TrimPrefix(fr.Func, Module+"/") }

// FuncPackage is the import path of the package of a function named as the
// runtime names it ("github.com/x/y.(*T).M.func1" → "github.com/x/y").
func FuncPackage(fn string) string {
	slash := strings.LastIndex(fn, "/")
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// Own reports whether fr is production code of the project: its package
// is the module's and its file no test file.
func (fr Frame) Own() bool {
	p := fr.Package()
	return (p == Module || strings.HasPrefix(p, Module+"/")) && !strings.HasSuffix(fr.File, "_test.go") &&
		!strings.HasPrefix(p, Module+"/test/")
}

// Stack is one goroutine's stack, outermost frame first; CreatedBy, when
// the goroutine was started by a function (not by the runtime), is that
// function's frame, which Frames begins with.
type Stack struct {
	Goroutine string // the header: "goroutine 7 [select]"
	Frames    []Frame
	Elided    bool // the runtime left frames out ("...additional frames elided...")
}

// ParseStacks reads the text runtime.Stack writes (one goroutine or all)
// into stacks, outermost frame first. The function that started a
// goroutine ("created by") becomes its outermost frame: the goroutine's
// work is that function's call.
func ParseStacks(text []byte) []Stack {
	var out []Stack
	var cur *Stack
	var inner []Frame // innermost first, as printed
	flush := func() {
		if cur == nil {
			return
		}
		for i := len(inner) - 1; i >= 0; i-- {
			cur.Frames = append(cur.Frames, inner[i])
		}
		out = append(out, *cur)
		cur, inner = nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "goroutine "):
			flush()
			cur = &Stack{Goroutine: strings.TrimSuffix(line, ":")}
		case cur == nil || line == "":
		case strings.HasPrefix(line, "...") && strings.Contains(line, "elided"):
			cur.Elided = true
		case strings.HasPrefix(line, "\t"):
			if len(inner) > 0 && inner[len(inner)-1].File == "" {
				fl := strings.TrimSpace(line)
				if sp := strings.LastIndex(fl, " +0x"); sp >= 0 {
					fl = fl[:sp]
				}
				if colon := strings.LastIndex(fl, ":"); colon >= 0 {
					inner[len(inner)-1].File = fl[:colon]
					fmt.Sscan(fl[colon+1:], &inner[len(inner)-1].Line)
				}
			}
		case strings.HasPrefix(line, "created by "):
			fn := strings.TrimPrefix(line, "created by ")
			if i := strings.Index(fn, " in goroutine "); i >= 0 {
				fn = fn[:i]
			}
			inner = append(inner, Frame{Func: fn})
		default: // a call: "pkg.F(args...)"
			fn := line
			if i := strings.LastIndex(fn, "("); i > 0 {
				fn = fn[:i]
			}
			inner = append(inner, Frame{Func: fn})
		}
	}
	flush()
	return out
}

// Has reports whether a frame of s is a function whose name contains part.
func (s Stack) Has(part string) bool {
	for _, fr := range s.Frames {
		if strings.Contains(fr.Func, part) {
			return true
		}
	}
	return false
}

// Climb is a call from package From into a package that imports From: the
// last frame of From before the call and the first of To after it; Via
// names the packages outside the project between them (mcp-go's server,
// net/http), if any.
type Climb struct {
	From, To Frame
	Via      []string
	// Callback is set when To is a closure of a function of the stretch of
	// To's package that called into From's: handed down and called back
	// within that one call (as sort.Slice calls its less), not a return to
	// a package the call had left. It still counts; it is marked.
	Callback bool
}

func (c Climb) String() string {
	s := fmt.Sprintf("%s → %s  (%s)", shortPkg(c.From.Package()), shortPkg(c.To.Package()), c.From.Short()+" → "+c.To.Short())
	if len(c.Via) > 0 {
		s += " via " + strings.Join(c.Via, ", ")
	}
	if c.Callback {
		s += " [a closure its caller handed down]"
	}
	return s
}

// Key identifies a climb across stacks: the same two functions.
func (c Climb) Key() string { return c.From.Func + " → " + c.To.Func }

func shortPkg(p string) string {
	if p == Module {
		return "pallasgw"
	}
	return strings.TrimPrefix(p, Module+"/")
}

// Path is the project packages s passes through, in order, each once per
// stretch.
func (g *Graph) Path(s Stack) []string {
	var path []string
	for _, fr := range s.Frames {
		if !fr.Own() {
			continue
		}
		if p := fr.Package(); len(path) == 0 || path[len(path)-1] != p {
			path = append(path, p)
		}
	}
	return path
}

// StackClimbs are the climbs of s: between two consecutive frames of the
// project's production code (frames of other modules and of tests
// between them are skipped and named in Via) whose packages differ, where
// the callee's imports the caller's. exempt, when it reports true for a
// callee frame, leaves that climb out (the call value's methods, the
// registered handler).
func (g *Graph) StackClimbs(s Stack, exempt func(to Frame) bool) []Climb {
	var out []Climb
	var last *Frame
	var stretch, before []Frame // the own frames of last's package in a row; of the stretch before
	var via []string
	for i := range s.Frames {
		fr := s.Frames[i]
		if !fr.Own() {
			if p := shortExternal(fr.Package()); last != nil && (len(via) == 0 || via[len(via)-1] != p) {
				via = append(via, p)
			}
			continue
		}
		if last != nil && g.Climbs(last.Package(), fr.Package()) && (exempt == nil || !exempt(fr)) {
			back := false
			for _, b := range before {
				back = back || strings.HasPrefix(fr.Func, b.Func+".func")
			}
			out = append(out, Climb{From: *last, To: fr, Via: via, Callback: back})
		}
		if last != nil && last.Package() != fr.Package() {
			before, stretch = stretch, nil
		}
		stretch = append(stretch, fr)
		last, via = &s.Frames[i], nil
	}
	return out
}

// shortExternal names a package outside the project by its module-ish
// prefix: "github.com/mark3labs/mcp-go/server", "net/http".
func shortExternal(p string) string {
	if strings.HasPrefix(p, Module+"/test/") || p == Module {
		return "test code"
	}
	return p
}

// Distinct is the climbs of all stacks, each pair of functions once, in
// the order first seen.
func Distinct(climbs ...[]Climb) []Climb {
	seen := map[string]bool{}
	var out []Climb
	for _, cs := range climbs {
		for _, c := range cs {
			if !seen[c.Key()] {
				seen[c.Key()] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Entered is, for each project package the stacks pass through, the
// packages it is entered from (sorted): the fan-in the issue reports.
func (g *Graph) Entered(stacks []Stack) map[string][]string {
	from := map[string]map[string]bool{}
	for _, s := range stacks {
		path := g.Path(s)
		for i, p := range path {
			if from[p] == nil {
				from[p] = map[string]bool{}
			}
			if i > 0 {
				from[p][path[i-1]] = true
			}
		}
	}
	out := map[string][]string{}
	for p, fs := range from {
		out[p] = []string{}
		for f := range fs {
			out[p] = append(out[p], shortPkg(f))
		}
		sort.Strings(out[p])
	}
	return out
}
