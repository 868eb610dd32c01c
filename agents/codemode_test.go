package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
)

const codeConfig = `
name: unit
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1", api_key: "sk-unit"}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
    repo-tools: {url: "http://127.0.0.1:2/mcp"}
agents:
  coder: {model: openai.script, servers: [files, repo-tools], tool_mode: code, code_mode: {max_tool_calls: 20}}
  box: {kind: toolbox, servers: [files, repo-tools]}
`

// scriptModel asks for run_script with the user's message as the code,
// then answers with the script's output. It records the run_script
// description it was offered.
type scriptModel struct {
	mu          sync.Mutex
	description string
}

func (*scriptModel) Name() string                            { return "openai" }
func (*scriptModel) Preflight(context.Context, string) error { return nil }
func (m *scriptModel) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		prefix := "ok: "
		if last.IsError {
			prefix = "error: "
		}
		return &llm.Response{Text: prefix + last.Text, FinishReason: "stop"}, nil
	}
	for _, t := range req.Tools {
		if t.Name == "run_script" {
			m.mu.Lock()
			m.description = t.Description
			m.mu.Unlock()
		}
	}
	args, _ := json.Marshal(map[string]string{"code": last.Text})
	return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "s1", Name: "run_script", Arguments: args}}, FinishReason: "tool_calls"}, nil
}

// pinnedDown hides files/unapproved as the pins Guard does: missing from
// the list, Hidden says it awaits approval.
type pinnedDown struct{ *agenttest.FakeDown }

func (pinnedDown) Hidden(server, tool string) error {
	if server == "files" && tool == "unapproved" {
		return fmt.Errorf("tool %q of server %q %w (new tool)", tool, server, pins.ErrAwaitsApproval)
	}
	return nil
}

type codeEnv struct {
	set   *agents.Set
	model *scriptModel
	down  *agenttest.FakeDown
	logs  *observer.ObservedLogs
}

// audit is the audit lines so far, "caller server/tool reason outcome".
func (e *codeEnv) audit() string {
	var b strings.Builder
	for _, l := range e.logs.FilterMessage("policy decision").All() {
		m := l.ContextMap()
		fmt.Fprintf(&b, "%s %s/%s %s %s\n", m["caller"], m["server"], m["tool"], m["reason"], m["outcome"])
	}
	return b.String()
}

// newCodeEnv builds codeConfig's agents: caller bob may not use
// files/secret, carol may make 3 requests a minute.
func newCodeEnv(t *testing.T, call func(ctx context.Context, server, tool string, args map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error)) *codeEnv {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(codeConfig))
	if err != nil {
		t.Fatal(err)
	}
	callers, err := policy.NewCallerPolicy(map[string]policy.Rule{
		"alice": {}, "bob": {ToolsDeny: []string{"files__secret"}},
		"carol": {Limits: quota.Limits{RequestsPerMinute: 3}},
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	num := mcpgo.NewTool("count", mcpgo.WithNumber("n", mcpgo.Required()))
	down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{
		"files":      {num, mcpgo.NewTool("secret"), mcpgo.NewTool("wait")},
		"repo-tools": {mcpgo.NewTool("get-issue", mcpgo.WithDescription("Gets an issue. By number."), mcpgo.WithNumber("number", mcpgo.Required()))},
	}, Call: call}
	m := metrics.New("test")
	core, logs := observer.New(zap.InfoLevel)
	model := &scriptModel{}
	set, err := agents.Build(agents.Deps{Config: cfg, Logger: zap.NewNop(), Metrics: m, Downstream: pinnedDown{down},
		Providers: map[string]llm.Provider{"openai": model},
		Composer:  &policy.Composer{Blocklist: policy.NewBlocklist(nil), Metrics: m},
		Auditor:   &policy.Auditor{Metrics: m, Logger: zap.New(core)},
		Callers:   callers, Quotas: &quota.Guard{Store: quota.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	return &codeEnv{set: set, model: model, down: down, logs: logs}
}

func (e *codeEnv) run(ctx context.Context, caller, code string) (string, error) {
	ctx = policy.WithIdentity(ctx, policy.Identity{Caller: caller})
	return e.set.Get("coder").Run(ctx, &agents.Call{Turn: agents.Turn{Message: code}, RequestID: "rid-1", Caller: caller, Inbound: http.Header{}})
}

func counting(_ context.Context, server, tool string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
	n, _ := args["n"].(float64)
	return mcpgo.NewToolResultStructured(map[string]any{"next": n + 1, "by": server + "/" + tool}, ""), nil
}

func TestCodeModeAgent(t *testing.T) {
	e := newCodeEnv(t, counting)
	answer, err := e.run(context.Background(), "alice", "n = 0\nfor i in range(4):\n    n = files.count(n=n)['next']\nresult = n")
	if err != nil || answer != "ok: result: 4" {
		t.Fatalf("answer %q, %v", answer, err)
	}
	e.model.mu.Lock()
	desc := e.model.description
	e.model.mu.Unlock()
	for _, want := range []string{"files.count(n: float)", `repo_tools.get_issue(number: float) -- Gets an issue. [server "repo-tools", tool "get-issue"]`} {
		if !strings.Contains(desc, want) {
			t.Errorf("run_script's description lacks %q:\n%s", want, desc)
		}
	}
	if got := strings.Count(e.audit(), "alice files/count allowed allow"); got != 4 {
		t.Errorf("%d audit lines of the calls, want 4:\n%s", got, e.audit())
	}
}

func TestCodeModeDeniedTool(t *testing.T) {
	e := newCodeEnv(t, counting)
	answer, err := e.run(context.Background(), "bob", "print('start')\nfiles.secret()\nprint('never')")
	if err != nil || !strings.HasPrefix(answer, "error: ") || !strings.Contains(answer, "line 2: ") ||
		!strings.Contains(answer, `tool "secret" of server "files" is denied by policy`) || strings.Contains(answer, "never") {
		t.Errorf("answer %q, %v", answer, err)
	}
	if !strings.Contains(e.audit(), "bob files/secret tool_denied") {
		t.Errorf("no audit line of the refusal:\n%s", e.audit())
	}
	if calls := e.down.CallLog(); len(calls) != 0 {
		t.Errorf("downstream called: %v", calls)
	}
}

func TestCodeModePinnedTool(t *testing.T) {
	e := newCodeEnv(t, counting)
	answer, _ := e.run(context.Background(), "alice", "x = files.count(n=1)\nfiles.unapproved()\n")
	if !strings.Contains(answer, "line 2: ") || !strings.Contains(answer, "awaits approval") {
		t.Errorf("answer %q", answer)
	}
}

func TestCodeModeQuotaMidScript(t *testing.T) {
	e := newCodeEnv(t, counting)
	answer, _ := e.run(context.Background(), "carol", "for i in range(10):\n    print(files.count(n=i)['next'])\n")
	if !strings.Contains(answer, "1\n2\n3\n") || strings.Contains(answer, "4\n") || !strings.Contains(answer, "over its limit of 3 requests per minute") {
		t.Errorf("answer %q", answer)
	}
	if n := len(e.down.CallLog()); n != 3 {
		t.Errorf("%d downstream calls, want 3", n)
	}
}

func TestCodeModeCancel(t *testing.T) {
	entered, ended := make(chan struct{}), make(chan struct{})
	e := newCodeEnv(t, func(ctx context.Context, _, tool string, _ map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		close(entered)
		<-ctx.Done()
		close(ended)
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.run(ctx, "alice", "files.wait()\nfiles.wait()\n")
		done <- err
	}()
	<-entered
	cancel()
	<-ended
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("run ended with %v", err)
	}
}

// Two callers' scripts at once, their calls in flight together: each sees
// its own results.
func TestCodeModeCallersApart(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	var once sync.Map
	e := newCodeEnv(t, func(ctx context.Context, _, _ string, _ map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		who := policy.IdentityFrom(ctx).Caller
		if _, seen := once.LoadOrStore(who, true); !seen {
			both.Done()
			both.Wait()
		}
		return mcpgo.NewToolResultText(`{"owner": "` + who + `"}`), nil
	})
	answers := make([]string, 2)
	var wg sync.WaitGroup
	for i, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _ = e.run(context.Background(), who, "result = [files.count(n=i)['owner'] for i in range(4)]")
		}()
	}
	wg.Wait()
	for i, who := range []string{"alice", "bob"} {
		if want := `ok: result: ["` + strings.Repeat(who+`","`, 3) + who + `"]`; answers[i] != want {
			t.Errorf("%s got %q, want %q", who, answers[i], want)
		}
	}
}

// A tool that asks the caller for input inside a script stops it.
func TestCodeModeToolAsksForInput(t *testing.T) {
	e := newCodeEnv(t, nil)
	e.down.Relayed = func(ctx context.Context, _, _ string, _ map[string]any, _ mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
		if _, err := rel.Request(ctx, "elicitation/create", json.RawMessage(`{"message":"sure?"}`)); err != nil {
			return mcpgo.NewToolResultError("the client declined: " + err.Error()), nil
		}
		return mcpgo.NewToolResultText("confirmed"), nil
	}
	answer, _ := e.run(context.Background(), "alice", "r = files.wait()\nprint('went on')\n")
	if !strings.Contains(answer, "line 1: ") || !strings.Contains(answer, "asked the caller for input") || strings.Contains(answer, "went on") {
		t.Errorf("answer %q", answer)
	}
}

// boxScript runs code with the toolbox's run_script as caller.
func (e *codeEnv) boxScript(t *testing.T, caller, code string) string {
	t.Helper()
	ctx := agents.WithRequestID(policy.WithIdentity(context.Background(), policy.Identity{Caller: caller}), "rid-1")
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "run_script", map[string]any{"code": code}
	res, err := agents.MCPServer(e.set.Get("box")).GetTool("run_script").Handler(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcpgo.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The toolbox's run_script: quota exhaustion mid-script, a pinned tool,
// a denied tool.
func TestCodeModeToolbox(t *testing.T) {
	e := newCodeEnv(t, counting)
	if got := e.boxScript(t, "carol", "for i in range(10):\n    print(files.count(n=i)['next'])\n"); !strings.Contains(got, "1\n2\n3\n") ||
		strings.Contains(got, "4\n") || !strings.Contains(got, "over its limit of 3 requests per minute") {
		t.Errorf("quota: %q", got)
	}
	if got := e.boxScript(t, "alice", "x = files.count(n=1)\nfiles.unapproved()\n"); !strings.Contains(got, "line 2: ") || !strings.Contains(got, "awaits approval") {
		t.Errorf("pinned: %q", got)
	}
	if got := e.boxScript(t, "bob", "files.secret()\n"); !strings.Contains(got, "line 1: ") || !strings.Contains(got, "DENIED_BY_POLICY") {
		t.Errorf("denied: %q", got)
	}
	if !strings.Contains(e.audit(), "bob files/secret tool_denied") {
		t.Errorf("no audit line of the refusal:\n%s", e.audit())
	}
}
