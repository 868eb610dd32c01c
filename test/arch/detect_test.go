package arch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The checks find what they are to find, in a small tree written for them,
// and nothing in the same code written as the issue asks.
func TestChecksFind(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module "+Module+"\n\ngo 1.26\n")
	write("agents/kinds/demo/demo.go", `package demo

import (
	"context"
	"net/http"

	"`+Module+`/agents/internal/ctxvalue"
)

type Handler func(ctx context.Context) error

type alias = Handler

type Deps struct {
	Name    string
	Observe func(tool string)
	Handle  Handler
	Other   alias
	Mux     http.HandlerFunc
	Client  *http.Client
}

type Host struct{ Run func() }

type Downstream interface{ Call() }
type JSONDownstream interface{ JSON() }

type kind struct {
	d    Deps
	down Downstream
}

func (k *kind) call(x any) {
	if j, ok := k.down.(JSONDownstream); ok {
		j.JSON()
	}
	switch x.(type) {
	case JSONDownstream:
	}
	_, _ = x.(error) // not a downstream
}

type state struct{ n int }

func stateOf(ctx context.Context) state { return ctxvalue.Of[state](ctx) }

func WithBehaviour(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, key{}, f)
}

type key struct{}

func BehaviourFrom(ctx context.Context) func() { f, _ := ctx.Value(key{}).(func()); return f }

func Count(ctx context.Context) int { return stateOf(ctx).n }

func Plain(ctx context.Context) error { return ctx.Err() }
`)
	write("agents/internal/ctxvalue/ctxvalue.go", `package ctxvalue

import "context"

type key[T any] struct{}

func Of[T any](ctx context.Context) T { v, _ := ctx.Value(key[T]{}).(T); return v }
`)
	write("agents/kinds/demo/demo_test.go", "package demo\n\ntype Host struct{ Test func() }\n")
	write("test/x/x.go", "package x\n\ntype Host struct{ Test func() }\n")
	s, err := LoadSource(root)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: found %q, want %q", what, got, want)
		}
	}
	check("function-typed fields", funcFields(s), []string{"agents/kinds/demo.Deps.Observe", "agents/kinds/demo.Deps.Handle",
		"agents/kinds/demo.Deps.Other", "agents/kinds/demo.Deps.Mux", "agents/kinds/demo.Host.Run"})
	check("context accessors", contextAccessorSites(s), []string{"agents/kinds/demo.BehaviourFrom", "agents/kinds/demo.Count",
		"agents/kinds/demo.WithBehaviour"})
}

// A stack climbs where a package calls into one that imports it, frames
// of other modules and of tests between them skipped; the runtime's text
// is read outermost frame first, with the goroutine's creator.
func TestStackClimbs(t *testing.T) {
	g := &Graph{Imports: map[string][]string{
		Module + "/gateway":      {Module + "/agents", Module + "/agents/wire"},
		Module + "/agents":       {Module + "/agents/wire"},
		Module + "/agents/proxy": {Module + "/agents", Module + "/agents/wire"},
		Module + "/agents/wire":  nil,
	}, deps: map[string]map[string]bool{}}
	text := `goroutine 7 [select]:
net/http.(*persistConn).roundTrip(0xc000)
	/usr/lib/go/src/net/http/transport.go:2700 +0x9a5
` + Module + `/agents/wire.call(...)
	/src/agents/wire/client.go:10
` + Module + `/agents/proxy.(*Proxy).forward(0xc0001)
	/src/agents/proxy/proxy.go:20 +0x10
github.com/mark3labs/mcp-go/server.(*MCPServer).handleToolCall(0x1)
	/mod/server.go:30 +0x1
` + Module + `/agents/wire.serve.func1()
	/src/agents/wire/fastcall.go:40 +0x1
` + Module + `/gateway.TestCallPath.func2()
	/src/gateway/callpath_test.go:50 +0x1
` + Module + `/agents.(*Set).Serve(0x1)
	/src/agents/agents.go:60 +0x1
` + Module + `/gateway.(*Gateway).agentRoute(0x1)
	/src/gateway/agentroute.go:70 +0x1
created by net/http.(*Server).Serve in goroutine 1
	/usr/lib/go/src/net/http/server.go:3000 +0x1

goroutine 8 [running]:
main.main()
	/src/main.go:1 +0x1
...additional frames elided...
`
	stacks := ParseStacks([]byte(text))
	if len(stacks) != 2 || !stacks[1].Elided || stacks[0].Elided {
		t.Fatalf("parsed %d stacks %+v", len(stacks), stacks)
	}
	s := stacks[0]
	if s.Frames[0].Func != "net/http.(*Server).Serve" || s.Frames[1].File != "/src/gateway/agentroute.go" || s.Frames[1].Line != 70 {
		t.Errorf("outermost frames %+v", s.Frames[:2])
	}
	if got, want := strings.Join(g.Path(s), " "), strings.Join([]string{Module + "/gateway", Module + "/agents",
		Module + "/agents/wire", Module + "/agents/proxy", Module + "/agents/wire"}, " "); got != want {
		t.Errorf("path %s, want %s", got, want)
	}
	var got []string
	for _, c := range g.StackClimbs(s, nil) {
		got = append(got, c.String())
	}
	want := []string{"agents/wire → agents/proxy  (agents/wire.serve.func1 → agents/proxy.(*Proxy).forward) via github.com/mark3labs/mcp-go/server"}
	if !slices.Equal(got, want) {
		t.Errorf("climbs %q, want %q", got, want)
	}
	back := ParseStacks([]byte("goroutine 9 [running]:\n" + Module + "/agents/wire.call.func1()\n\t/src/w.go:3 +0x1\n" +
		Module + "/agents/internal/ctxvalue.With[...](0x1)\n\t/src/c.go:2 +0x1\n" +
		Module + "/agents/wire.helper(0x1)\n\t/src/w.go:2 +0x1\n" + Module + "/agents/wire.call(0x1)\n\t/src/w.go:1 +0x1\n"))
	g.Imports[Module+"/agents/wire"] = []string{Module + "/agents/internal/ctxvalue"}
	g.deps = map[string]map[string]bool{}
	if cs := g.StackClimbs(back[0], nil); len(cs) != 1 || !cs[0].Callback {
		t.Errorf("a closure called back by the helper it was handed to: %+v", cs)
	}
	if cs := g.StackClimbs(s, func(to Frame) bool { return strings.Contains(to.Func, "proxy.(*Proxy).forward") }); len(cs) != 0 {
		t.Errorf("an exempt callee still climbs: %v", cs)
	}
}
