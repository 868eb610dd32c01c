// Package arch holds checks of the code's shape that the compiler does not
// make: they type-check the module's production code (no _test.go files)
// and fail on a construct the design rules out.
package arch

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpclientPath is the package of the one downstream type.
const mcpclientPath = "github.com/pallasgw/pallasgw/agents/mcpclient"

// callMethods name a downstream: an interface with one of them is a
// downstream (the one, mcpclient.Downstream, or a narrowing of it).
var callMethods = []string{"CallTool", "CallToolRaw", "CallToolJSON", "TaskRequest"}

// isDownstream reports whether a value of type t is a downstream: the
// mcpclient's Downstream, Downstreams or Manager, or an interface with a
// downstream's call methods.
func isDownstream(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == mcpclientPath {
		switch n.Obj().Name() {
		case "Downstream", "Downstreams", "Manager":
			return true
		}
	}
	it, ok := t.Underlying().(*types.Interface)
	if !ok {
		return false
	}
	for i := range it.NumMethods() {
		for _, m := range callMethods {
			if it.Method(i).Name() == m {
				return true
			}
		}
	}
	return false
}

// downstreamAssertions lists, as "file:line: what", every type assertion
// and type switch of a downstream value in files (one package, type-checked
// with imp).
func downstreamAssertions(fset *token.FileSet, path string, files []*ast.File, imp types.Importer) ([]string, error) {
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(path, fset, files, info); err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", path, err)
	}
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok {
				return true
			}
			if tv, ok := info.Types[ta.X]; ok && isDownstream(tv.Type) {
				what := "type switch"
				if ta.Type != nil {
					what = "type assertion to " + types.ExprString(ta.Type)
				}
				out = append(out, fmt.Sprintf("%s: %s of %s (%s)", fset.Position(ta.Pos()), what, types.ExprString(ta.X), tv.Type))
			}
			return true
		})
	}
	return out, nil
}

// goList runs go list in the module's root with args and returns its
// output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// exportImporter imports packages from the compiler's export data, as go
// list -export names it.
func exportImporter(fset *token.FileSet, export map[string]string) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}

// No production code asks a downstream what else it is: the kinds call the
// one downstream type (mcpclient.Downstream) and every method it has, not
// optional interfaces found by type assertion.
func TestNoDownstreamTypeAssertion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds export data for the whole module")
	}
	export := map[string]string{}
	for _, l := range goList(t, "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}", "./...") {
		path, file, _ := strings.Cut(l, "\t")
		export[path] = file
	}
	fset := token.NewFileSet()
	imp := exportImporter(fset, export)
	checked, sawDownstream := 0, false
	var found []string
	for _, l := range goList(t, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", "./...") {
		fields := strings.SplitN(l, "\t", 3)
		if len(fields) < 3 || fields[2] == "" {
			continue
		}
		path, dir := fields[0], fields[1]
		if strings.Contains(path, "/internal/agenttest") || strings.HasPrefix(path, "github.com/pallasgw/pallasgw/test/") {
			continue // test helpers, not production code
		}
		var files []*ast.File
		for _, name := range strings.Fields(fields[2]) {
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		got, err := downstreamAssertions(fset, path, files, imp)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, got...)
		checked++
		sawDownstream = sawDownstream || path == mcpclientPath
	}
	if checked < 20 || !sawDownstream {
		t.Fatalf("checked %d packages (mcpclient among them: %v): go list found too few", checked, sawDownstream)
	}
	for _, f := range found {
		t.Errorf("%s: call the downstream's methods (mcpclient.Downstream has them all)", f)
	}
}

// The check sees an assertion and a switch of a downstream, and leaves
// other assertions alone.
func TestDownstreamAssertionsSeen(t *testing.T) {
	const src = `package p

import "context"

type Down interface {
	CallTool(ctx context.Context, server string) error
}

type Logging interface{ SetLogLevel(level string) error }

func f(d Down, v any) {
	if l, ok := d.(Logging); ok {
		_ = l
	}
	switch d.(type) {
	case Logging:
	}
	_, _ = v.(error)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := downstreamAssertions(fset, "p", []*ast.File{f}, importer.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "type assertion to Logging of d") || !strings.Contains(got[1], "type switch of d") {
		t.Fatalf("found %q, want the assertion and the switch of d", got)
	}
}
