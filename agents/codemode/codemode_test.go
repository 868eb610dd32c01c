package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.starlark.net/starlark"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// echo is a Caller that answers each call with its arguments as JSON text
// and counts the calls.
type echo struct {
	mu    sync.Mutex
	calls []string
}

func (e *echo) call(_ context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	e.mu.Lock()
	e.calls = append(e.calls, server+"/"+tool+" "+string(args))
	e.mu.Unlock()
	return mcp.NewToolResultText(string(args)), nil
}

var schemaN = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"note":{"type":"string"}},"required":["n"]}`)

func tools() *Bindings {
	return Bind([]string{"files", "repo-tools"}, []Tool{
		{Server: "files", Name: "read", Description: "Reads a file. More text.", InputSchema: schemaN},
		{Server: "repo-tools", Name: "get.issue", InputSchema: schemaN},
		{Server: "repo-tools", Name: "pass", InputSchema: schemaN},
	})
}

func run(t *testing.T, lim config.CodeMode, code string, call Caller) (Output, error) {
	t.Helper()
	if call == nil {
		call = (&echo{}).call
	}
	return NewRunner(lim).Run(context.Background(), Script{Code: code, Tools: tools(), Call: call})
}

func TestScriptCallsTools(t *testing.T) {
	e := &echo{}
	var progress []string
	out, err := NewRunner(config.CodeMode{}).Run(context.Background(), Script{Tools: tools(), Call: e.call,
		Progress: func(m string) { progress = append(progress, m) },
		Code: `
total = 0
for i in range(3):
    r = files.read(n=i)
    total += r["n"]
x = repo_tools.get_issue({"n": total, "note": "a-b"})
print("x is", x)
result = {"total": total, "pass": repo_tools.pass_(n=1)}
`})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x is {\"n\": 3, \"note\": \"a-b\"}\nresult: {\"total\":3,\"pass\":{\"n\":1}}"; out.Text() != want {
		t.Errorf("output %q, want %q", out.Text(), want)
	}
	if want := []string{`files/read {"n":0}`, `files/read {"n":1}`, `files/read {"n":2}`, `repo-tools/get.issue {"n":3,"note":"a-b"}`, `repo-tools/pass {"n":1}`}; fmt.Sprint(e.calls) != fmt.Sprint(want) {
		t.Errorf("calls %q, want %q", e.calls, want)
	}
	if want := "step 5: repo_tools.pass_"; len(progress) != 5 || progress[4] != want {
		t.Errorf("progress %q, want 5 steps ending %q", progress, want)
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"get-file": "get_file", "a.b-c": "a_b_c", "pass": "pass_", "lambda": "lambda_",
		"import": "import_", "9lives": "_9lives", "ok_name": "ok_name", "ünï": "_n_"} {
		if got := Ident(in); got != want {
			t.Errorf("Ident(%q) = %q, want %q", in, got, want)
		}
	}
	b := Bind([]string{"s"}, []Tool{{Server: "s", Name: "a-b"}, {Server: "s", Name: "a.b"}, {Server: "s", Name: "ok"}})
	listing := b.Listing()
	if !strings.Contains(listing, `# not callable: s.a_b: tools "a-b", "a.b" of server s all map to this name`) || !strings.Contains(listing, "s.ok()") {
		t.Errorf("listing:\n%s", listing)
	}
	if b.Len() != 1 {
		t.Errorf("callable %d, want 1", b.Len())
	}
	if l := tools().Listing(); !strings.Contains(l, `files.read(n: int, note?: str) -- Reads a file.`) ||
		!strings.Contains(l, `repo_tools.get_issue(n: int, note?: str) [server "repo-tools", tool "get.issue"]`) {
		t.Errorf("listing:\n%s", l)
	}
	for _, servers := range [][]string{{"a-b", "a.b"}, {"list"}, {"result"}, {"is-error"}} {
		if err := CheckServers(servers); err == nil {
			t.Errorf("servers %q accepted", servers)
		}
	}
	if err := CheckServers([]string{"github", "my-files"}); err != nil {
		t.Error(err)
	}
	for name := range starlark.Universe { // config's list of builtins is complete
		if !config.ScriptReserved(name) {
			t.Errorf("a server may be named %q, a builtin's name", name)
		}
	}
	_, err := run(t, config.CodeMode{}, "files.nope(n=1)", nil)
	if err == nil || !strings.Contains(err.Error(), "line 1: server files has no tool nope you may call (its tools: read)") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestToolErrorIsAValue(t *testing.T) {
	out, err := run(t, config.CodeMode{}, `
r = files.read(n=1)
if is_error(r):
    result = "failed: " + r.error
`, func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("no such file"), nil
	})
	if err != nil || string(out.Result) != `"failed: no such file"` {
		t.Errorf("got %s, %v", out.Result, err)
	}
}

func TestRefusalStopsTheScript(t *testing.T) {
	refusal := errors.New("tool read of server files is denied by policy (tool_denied)")
	calls := 0
	out, err := run(t, config.CodeMode{}, "print('before')\nfiles.read(n=1)\nprint('after')\n",
		func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
			calls++
			return nil, refusal
		})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, refusal) || e.Line != 2 || !strings.Contains(err.Error(), "files.read: tool read of server files is denied") {
		t.Fatalf("error %v", err)
	}
	if out.Printed != "before\n" || calls != 1 {
		t.Errorf("printed %q after %d calls", out.Printed, calls)
	}
}

func TestStructuredAndTextResults(t *testing.T) {
	results := []*mcp.CallToolResult{
		mcp.NewToolResultStructured(map[string]any{"a": []any{1.0, 2.5, "x", nil, true}}, "ignored"),
		mcp.NewToolResultText(`[1, 2, 12345678901234567890]`),
		mcp.NewToolResultText("plain"),
	}
	out, err := run(t, config.CodeMode{}, "result = [files.read(n=1), files.read(n=2), files.read(n=3)]",
		func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
			r := results[0]
			results = results[1:]
			return r, nil
		})
	if want := `[{"a":[1,2.5,"x",null,true]},[1,2,12345678901234567890],"plain"]`; err != nil || string(out.Result) != want {
		t.Errorf("got %s, %v; want %s", out.Result, err, want)
	}
}

func TestInputRequiredIsRefused(t *testing.T) {
	_, err := run(t, config.CodeMode{}, "files.read(n=1)", func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
		r := mcp.NewToolResultText("")
		r.ResultType = mcp.ResultTypeInputRequired
		return r, nil
	})
	if !errors.Is(err, errInput) || !strings.Contains(err.Error(), "asked the caller for input") {
		t.Errorf("error %v", err)
	}
	relay, asked := NoInput()
	if asked() != nil {
		t.Fatal("nothing asked yet")
	}
	if _, err := relay.Request(context.Background(), "elicitation/create", json.RawMessage(`{}`)); err == nil {
		t.Fatal("the downstream's elicitation was answered")
	}
	if !errors.Is(asked(), errInput) {
		t.Errorf("asked() = %v after an elicitation", asked())
	}
}

func TestErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{"x = 1\ny = (\n", "line 3: syntax error"},
		{"x = 1\nprint(undefined_name)\n", "line 2: undefined: undefined_name"},
		{"x = {}\ny = 2\nz = x['k']\n", `line 3: key "k" not in dict`},
		{"def f():\n    return 1 // 0\nf()\n", "line 2: floored division by zero"},
		{"load('m', 'x')\n", "line 1: syntax error: load is not available"},
		{"def f(n):\n    return f(n)\nf(1)\n", "line 2: function f called recursively"},
		{"s = 'a' + 1\n", "line 1: unknown binary op: string + int"},
		{"x = 1\ny = 2\nwhile True:\n    pass\n", "line 3: max_steps (1000000) exceeded"},
		{"x = []\nwhile True:\n    x = [x]\n", "line 3: max_steps (1000000) exceeded"},
	} {
		_, err := run(t, config.CodeMode{}, c.code, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.code, err, c.want)
		}
	}
}

func TestNothingElseIsReachable(t *testing.T) {
	for _, name := range []string{"open", "time", "json", "http", "os", "exec", "eval", "import_module"} {
		_, err := run(t, config.CodeMode{}, name+"\n", nil)
		if err == nil || !strings.Contains(err.Error(), "undefined: "+name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every bound stops the script and names itself.
func TestBounds(t *testing.T) {
	small := config.CodeMode{MaxSteps: 10_000, MaxToolCalls: 3, MaxOutput: 100, MaxValueBytes: 1 << 16, Timeout: time.Minute}
	for _, c := range []struct {
		name, code, bound string
	}{
		{"endless loop", "while True:\n    pass\n", "max_steps"},
		{"long loop", "for i in range(1000000):\n    x = i\n", "max_steps"},
		{"tool calls", "for i in range(10):\n    files.read(n=i)\n", "max_tool_calls"},
		{"print", "for i in range(100):\n    print('0123456789')\n", "max_output"},
		{"result", "result = 'x' * 200\n", "max_output"},
		{"doubling string", "s = 'x'\nfor i in range(64):\n    s = s + s\n", "max_value_bytes"},
		{"doubling in place", "s = 'x'\nfor i in range(64):\n    s += s\n", "max_value_bytes"},
		{"repeat", "s = 'x' * 100000000\n", "max_value_bytes"},
		{"repeat list", "l = [1] * 100000000\n", "max_value_bytes"},
		{"list extend", "l = [1]\nfor i in range(64):\n    l.extend(l)\n", "max_value_bytes"},
		{"list +=", "l = [1]\nfor i in range(64):\n    l += l\n", "max_value_bytes"},
		{"join", "l = ['x' * 1000] * 60\nfor i in range(64):\n    l = [''.join(l)] * 60\n", "max_value_bytes"},
		{"replace", "s = 'xxxxxxxxxx'\nfor i in range(64):\n    s = s.replace('x', 'xx')\n", "max_value_bytes"},
		{"format", "s = 'x'\nfor i in range(64):\n    s = '{}{}'.format(s, s)\n", "max_value_bytes"},
		{"percent", "s = 'x'\nfor i in range(64):\n    s = '%s%s' % (s, s)\n", "max_value_bytes"},
		{"materialised range", "l = list(range(100000000))\n", "max_value_bytes"},
		{"sorted range", "l = sorted(range(100000000))\n", "max_value_bytes"},
		{"enumerate", "l = enumerate(range(100000000))\n", "max_value_bytes"},
		{"split", "s = ',' * 60000\nl = s.split(',')\n", "max_value_bytes"},
		{"codepoints", "s = 'x' * 60000\nl = list(s.codepoints())\n", "max_value_bytes"},
		{"str of shared refs", "l = ['x' * 1000] * 1000\ns = str(l)\n", "max_value_bytes"},
		{"squaring int", "x = 3\nfor i in range(64):\n    x = x * x\n", "max_value_bytes"},
		{"argument", "files.read(n=1, note='x' * 60000 + 'y' * 6000)\n", "max_value_bytes"},
		{"built in all", "for i in range(100):\n    s = 'x' * 60000\n", "max_value_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(t, small, c.code, nil)
			var e *Error
			if !errors.As(err, &e) || e.Bound != c.bound || !strings.Contains(err.Error(), c.bound) || e.Line == 0 && c.bound != "max_output" {
				t.Fatalf("error %v (bound %q), want %s named, with a line", err, boundOfErr(err), c.bound)
			}
		})
	}
}

func boundOfErr(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Bound
	}
	return ""
}

// A deep structure is bounded by max_steps while it is built, and refused
// where it would be printed or returned.
func TestDeepStructure(t *testing.T) {
	_, err := run(t, config.CodeMode{MaxSteps: 10_000}, "x = []\nfor i in range(1000000):\n    x = [x]\n", nil)
	if boundOfErr(err) != "max_steps" {
		t.Errorf("building: %v", err)
	}
	_, err = run(t, config.CodeMode{}, "x = []\nfor i in range(1000):\n    x = [x]\nprint(x)\n", nil)
	if err == nil || !strings.Contains(err.Error(), "nests deeper than 64") {
		t.Errorf("printing: %v", err)
	}
	_, err = run(t, config.CodeMode{}, "x = []\nfor i in range(1000):\n    x = [x]\nresult = x\n", nil)
	if err == nil || !strings.Contains(err.Error(), "nests deeper than 64") {
		t.Errorf("result: %v", err)
	}
}

// A string doubling is stopped before the process suffers: what the
// script allocates stays within a few times max_value_bytes in all.
func TestDoublingAllocatesLittle(t *testing.T) {
	lim := config.CodeMode{MaxValueBytes: 1 << 20}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := run(t, lim, "s = 'x'\nfor i in range(64):\n    s = s + s\n", nil)
	runtime.ReadMemStats(&after)
	if boundOfErr(err) != "max_value_bytes" {
		t.Fatalf("error %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("the script allocated %d bytes, want under 8 MiB (max_value_bytes 1 MiB)", got)
	}
}

func TestTimeoutStopsATool(t *testing.T) {
	ended := make(chan struct{})
	_, err := run(t, config.CodeMode{Timeout: 50 * time.Millisecond}, "files.read(n=1)\n", func(ctx context.Context, _, _ string, _ json.RawMessage) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	<-ended
	if boundOfErr(err) != "timeout" || !strings.Contains(err.Error(), "timeout (50ms) exceeded") {
		t.Errorf("error %v", err)
	}
	_, err = run(t, config.CodeMode{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 62}, "while True:\n    pass\n", nil)
	if boundOfErr(err) != "timeout" {
		t.Errorf("spinning: %v", err)
	}
}

// The caller's cancellation stops the script and the tool call it runs.
func TestCancelStopsScriptAndCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	entered, ended := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := NewRunner(config.CodeMode{}).Run(ctx, Script{Tools: tools(), Code: "files.read(n=1)\nfiles.read(n=2)\n",
			Call: func(ctx context.Context, _, _ string, _ json.RawMessage) (*mcp.CallToolResult, error) {
				close(entered)
				<-ctx.Done()
				close(ended)
				return nil, ctx.Err()
			}})
		done <- err
	}()
	<-entered
	cancel()
	<-ended
	err := <-done
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "canceled by the caller") {
		t.Errorf("error %v", err)
	}
	// And a spinning script.
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		_, err := NewRunner(config.CodeMode{MaxSteps: 1 << 62}).Run(ctx, Script{Tools: tools(), Code: "files.read(n=1)\nwhile True:\n    pass\n",
			Call: func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
				cancel() // the script spins after this call
				return mcp.NewToolResultText("{}"), nil
			}})
		done <- err
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("spinning: %v", err)
	}
}

func TestMaxConcurrent(t *testing.T) {
	r := NewRunner(config.CodeMode{MaxConcurrent: 2})
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.Run(context.Background(), Script{Tools: tools(), Code: "files.read(n=1)",
				Call: func(context.Context, string, string, json.RawMessage) (*mcp.CallToolResult, error) {
					entered <- struct{}{}
					<-release
					return mcp.NewToolResultText("{}"), nil
				}})
		}()
	}
	<-entered
	<-entered
	_, err := r.Run(context.Background(), Script{Tools: tools(), Code: "x = 1"})
	if boundOfErr(err) != "max_concurrent" || !strings.Contains(err.Error(), "max_concurrent (2)") {
		t.Errorf("third script: %v", err)
	}
	close(release)
	wg.Wait()
	if _, err := r.Run(context.Background(), Script{Tools: tools(), Code: "x = 1"}); err != nil {
		t.Errorf("after: %v", err)
	}
}

// Two scripts of two principals at once, their calls in flight together,
// each see their own results only.
func TestScriptsDoNotShare(t *testing.T) {
	r := NewRunner(config.CodeMode{})
	var both sync.WaitGroup
	both.Add(2)
	caller := func(who string) Caller {
		first := true
		return func(_ context.Context, _, _ string, args json.RawMessage) (*mcp.CallToolResult, error) {
			if first { // both scripts' first calls are in flight together
				first = false
				both.Done()
				both.Wait()
			}
			return mcp.NewToolResultStructured(map[string]any{"owner": who, "args": string(args)}, ""), nil
		}
	}
	outs := make([]Output, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = r.Run(context.Background(), Script{Tools: tools(), Call: caller(who),
				Code: "seen = [files.read(n=i)['owner'] for i in range(5)]\nresult = seen"})
		}()
	}
	wg.Wait()
	for i, who := range []string{"alice", "bob"} {
		want := `["` + strings.Repeat(who+`","`, 4) + who + `"]`
		if errs[i] != nil || string(outs[i].Result) != want {
			t.Errorf("%s: %s, %v", who, outs[i].Result, errs[i])
		}
	}
}
