package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An agent without the message tool (a proxy, a toolbox, a renamed
// tool_name) is reported before the first message, with its tools and
// --tool, not as the server's "tool not found".
func TestChatSuggestsTool(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "px", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "search", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The agent's endpoint is <url>/agents/<name>/mcp; the handler ignores the path.
	var out strings.Builder
	err := Run(ctx, Options{URL: ts.URL, Agent: "px", Message: "hi", In: strings.NewReader(""), Out: &out, Progress: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `agent px has no tool "send_message"; its tools: search (choose one with --tool NAME)`) {
		t.Fatalf("err %v, want the agent's tools and --tool", err)
	}
	out.Reset()
	if err := Run(ctx, Options{URL: ts.URL, Agent: "px", Tool: "search", Message: "hi", In: strings.NewReader(""), Out: &out, Progress: io.Discard}); err != nil || strings.TrimSpace(out.String()) != "found" {
		t.Fatalf("--tool search: %v %q", err, out.String())
	}
}

// recorder is an agent stand-in whose send_message (with the given input
// schema) records its arguments and answers "answer N".
type recorder struct {
	mu    sync.Mutex
	calls []map[string]any
}

func (r *recorder) serve(t *testing.T, schema map[string]any) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "send_message", Description: "Send a message.\nMore.", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			r.mu.Lock()
			r.calls = append(r.calls, args)
			n := len(r.calls)
			r.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("answer %d", n)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "get_health", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// got is a copy of the calls so far.
func (r *recorder) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any{}, r.calls...)
}

func messageSchema(extra ...string) map[string]any {
	props := map[string]any{"message": map[string]any{"type": "string"}, "history": map[string]any{"type": "array"}}
	for _, e := range extra {
		props[e] = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": props, "required": []any{"message"}}
}

// The slash commands of an interactive chat: /system and /set shape the
// following messages (system_append, params), /save writes the history
// in send_message's history shape, /clear forgets it, /tools lists the
// agent's tools, /quit ends the chat; none of them is sent as a message.
func TestChatSlashCommands(t *testing.T) {
	var rec recorder
	url := rec.serve(t, messageSchema("params", "system_append", "system_override"))
	saved := filepath.Join(t.TempDir(), "history.json")
	in := strings.Join([]string{"/help", "/tools", "/system Be brief.", "/set temperature=0.2", `/set stop=["x"]`, "/set style=terse",
		"hello", "/system", "/set temperature=", "second", "/save " + saved, "/clear", "//third", "/bogus", "/quit", "never sent"}, "\n")
	var out, progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, Options{URL: url, Agent: "a", In: strings.NewReader(in), Out: &out, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "answer 1\nanswer 2\nanswer 3\n" {
		t.Fatalf("answers %q; stderr:\n%s", out.String(), progress.String())
	}
	want := []string{
		`{"message":"hello","params":{"stop":["x"],"style":"terse","temperature":0.2},"system_append":"Be brief."}`,
		`{"history":[{"content":"hello","role":"user"},{"content":"answer 1","role":"assistant"}],"message":"second","params":{"stop":["x"],"style":"terse"}}`,
		`{"message":"/third","params":{"stop":["x"],"style":"terse"}}`,
	}
	calls := rec.got()
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %v", len(calls), len(want), calls)
	}
	for i, w := range want {
		if got, _ := json.Marshal(calls[i]); string(got) != w {
			t.Errorf("call %d sent\n%s\nwant\n%s", i+1, got, w)
		}
	}
	raw, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var history []map[string]any
	if err := json.Unmarshal(raw, &history); err != nil {
		t.Fatalf("saved history %s: %v", raw, err)
	}
	if got, _ := json.Marshal(history); string(got) != `[{"content":"hello","role":"user"},{"content":"answer 1","role":"assistant"},{"content":"second","role":"user"},{"content":"answer 2","role":"assistant"}]` {
		t.Errorf("saved history %s", got)
	}
	for _, w := range []string{"/save FILE", "get_health()", "send_message(history, message*, params, system_append, system_override): Send a message.\n",
		"system_append cleared", "param temperature removed", "saved 4 messages to " + saved, "unknown command /bogus"} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, progress.String())
		}
	}
}

// /system and /set against an agent whose send_message does not take
// system_append or params say so and send nothing of the kind.
func TestChatOverridesNotAllowed(t *testing.T) {
	var rec recorder
	url := rec.serve(t, messageSchema())
	var out, progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := "/system Be brief.\n/set temperature=0.2\nhello\n"
	if err := Run(ctx, Options{URL: url, Agent: "a", In: strings.NewReader(in), Out: &out, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"agent a does not take system_append (its config does not set overrides: {system: true}); nothing set",
		"agent a does not take per-call params (its config does not set overrides: {params: true}); nothing set"} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, progress.String())
		}
	}
	if calls := rec.got(); len(calls) != 1 || len(calls[0]) != 1 {
		t.Errorf("calls %v, want one with the message only", calls)
	}
}

// A saved conversation resumes: --history FILE sends its turns with the
// first message, /load FILE replaces the history with a file's (system and
// tool turns kept as written), and a file that is no history is refused
// with the history unchanged.
func TestChatResumesSavedHistory(t *testing.T) {
	var rec recorder
	url := rec.serve(t, messageSchema())
	dir := t.TempDir()
	saved, other, bad := filepath.Join(dir, "saved.json"), filepath.Join(dir, "other.json"), filepath.Join(dir, "bad.json")
	otherHistory := `[{"role":"system","content":"Be brief."},{"role":"user","content":"look"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"files__read","arguments":{"path":"a"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"text of a"}]`
	for f, s := range map[string]string{other: otherHistory, bad: `{"role":"user"}`} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(o Options) string {
		var progress strings.Builder
		o.URL, o.Agent, o.Out, o.Progress = url, "a", io.Discard, &progress
		if err := Run(ctx, o); err != nil {
			t.Fatalf("%v; stderr:\n%s", err, progress.String())
		}
		return progress.String()
	}
	run(Options{In: strings.NewReader("hello\n/save " + saved + "\n")})
	if p := run(Options{History: saved, Message: "again"}); !strings.Contains(p, "loaded 2 messages from "+saved) {
		t.Errorf("--history: stderr %q", p)
	}
	p := run(Options{In: strings.NewReader(strings.Join([]string{"/load " + other, "next", "/load " + bad, "/load " + filepath.Join(dir, "none.json"), "last"}, "\n"))})
	for _, w := range []string{"loaded 4 messages from " + other, "is not a JSON array of messages", "no such file", "the history is unchanged"} {
		if !strings.Contains(p, w) {
			t.Errorf("stderr lacks %q:\n%s", w, p)
		}
	}
	want := []string{
		`{"message":"hello"}`,
		`{"history":[{"content":"hello","role":"user"},{"content":"answer 1","role":"assistant"}],"message":"again"}`,
		`{"history":` + otherHistory + `,"message":"next"}`,
		`{"history":` + strings.TrimSuffix(otherHistory, "]") + `,{"content":"next","role":"user"},{"content":"answer 3","role":"assistant"}],"message":"last"}`,
	}
	calls := rec.got()
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %v", len(calls), len(want), calls)
	}
	for i, w := range want {
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(calls[i])
		if wb, _ := json.Marshal(wv); string(got) != string(wb) {
			t.Errorf("call %d sent\n%s\nwant\n%s", i+1, got, wb)
		}
	}
	if err := Run(ctx, Options{URL: url, Agent: "a", History: bad, Message: "x", Out: io.Discard, Progress: io.Discard}); err == nil ||
		!strings.Contains(err.Error(), "is not a JSON array") {
		t.Errorf("--history with a bad file: %v", err)
	}
}
