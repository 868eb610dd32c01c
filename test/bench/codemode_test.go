package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

// Code mode: one task of 8 sequentially dependent tool calls over 3 tools
// on 3 servers (each call's arguments come from the previous result, so
// the tool loop cannot batch them), run by an llm agent with the tool loop
// and by one with tool_mode: code, with the scripted fake model (zero
// latency). Measured:
//   - model requests and input tokens (request body bytes / 4: messages,
//     tools and system prompt) over the whole task, and that both runs
//     hand the model the same facts for the same final answer;
//   - a script's own cost per tool call (interpreter and marshalling, in
//     process: the script's time less the time spent in its Caller);
//   - runaway scripts (an endless loop, a doubling string, a deep
//     structure) stopped by their bounds;
//   - a proxied call's p50 with max_concurrent runaway scripts running on
//     the same gateway, against idle.
func BenchmarkCodeMode(b *testing.B) {
	noPerOpFigures(b)
	if warmUpOnly(b) {
		return
	}
	chain := newChainDownstreams(b)
	echo := newDownstream(b)
	llm := fakellm.New(b)
	g := startGateway(b, fmt.Sprintf(codeModeConfig, llm.OpenAIBaseURL(), chain["tickets"].url(), chain["people"].url(), chain["teams"].url(), echo.url()))

	// send runs agent on the task and returns its chat requests.
	send := func(agent string, steps ...fakellm.Step) []fakellm.Request {
		n := len(llm.ChatRequests())
		llm.Script(steps...)
		mustLoad(b, g, load.Options{URL: g.agentURL(agent), Style: load.Sessionless, Concurrency: 1, Requests: 1,
			Tool: "send_message", Arguments: map[string]any{"message": chainTask}})
		if llm.Pending() != 0 {
			b.Fatalf("%s: %d scripted steps left", agent, llm.Pending())
		}
		return llm.ChatRequests()[n:]
	}
	var loopSteps []fakellm.Step
	for _, c := range chainCalls {
		loopSteps = append(loopSteps, fakellm.ToolCalls(fakellm.Call{Name: c.server + "__" + c.tool, Args: json.RawMessage(c.args)}))
	}
	loop := send("loop", append(loopSteps, fakellm.Text(chainAnswer))...)
	code := send("coder", fakellm.ToolCalls(fakellm.Call{Name: "run_script", Args: mustJSON(b, map[string]string{"code": chainScript})}), fakellm.Text(chainAnswer))
	// The facts of the answer reach the model both ways.
	for _, reqs := range [][]fakellm.Request{loop, code} {
		last := string(reqs[len(reqs)-1].Body)
		for _, fact := range []string{"T-9", "Refund service returns 502", "open"} {
			if !strings.Contains(last, fact) {
				b.Errorf("the model's last request lacks %q", fact)
			}
		}
	}
	if !strings.Contains(string(code[1].Body), `result: {\"ticket\":\"T-9\"`) {
		b.Errorf("code mode: the script's result is not in the model's second request: %.600s", code[1].Body)
	}
	reportCodeModeTask(b, loop, code)

	perCall := scriptOverhead(b, calls(b))
	b.ReportMetric(float64(perCall)/float64(time.Microsecond), "script-µs/call")
	record(92, "code mode: a script's own cost per tool call (interpreter, marshalling; in process)", "< 50 µs",
		fmt.Sprintf("%.1f µs %s", float64(perCall)/float64(time.Microsecond), verdict(perCall < 50*time.Microsecond)), "", "")

	runaways(b, g, llm)
	runawayLoad(b, g)
}

func mustJSON(b *testing.B, v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func reportCodeModeTask(b *testing.B, loop, code []fakellm.Request) {
	tokens := func(reqs []fakellm.Request) int {
		n := 0
		for _, r := range reqs {
			n += len(r.Body)
		}
		return n / 4
	}
	lt, ct := tokens(loop), tokens(code)
	reqRatio := float64(len(loop)) / float64(len(code))
	saved := 1 - float64(ct)/float64(lt)
	b.ReportMetric(reqRatio, "fewer-requests-x")
	b.ReportMetric(100*saved, "fewer-input-tokens-%")
	b.Logf("code mode, 8 dependent calls over 3 tools:\n%s", table([]string{"whole task", "tool loop", "tool_mode: code", "code mode saves", "target"}, func(add func(...string)) {
		add("model requests", fmt.Sprint(len(loop)), fmt.Sprint(len(code)), fmt.Sprintf("%.1fx fewer", reqRatio), "≥ 3x fewer "+verdict(reqRatio >= 3))
		add("input tokens (body bytes / 4)", fmt.Sprint(lt), fmt.Sprint(ct), fmt.Sprintf("%.1f%% fewer", 100*saved), "≥ 50% fewer "+verdict(saved >= 0.5))
	}))
	record(90, "code mode: model requests, 8 dependent calls over 3 tools", "≥ 3x fewer",
		fmt.Sprintf("%d: %.1fx fewer %s", len(code), reqRatio, verdict(reqRatio >= 3)), fmt.Sprintf("%d (tool loop)", len(loop)), fmt.Sprintf("%.3f", 1/reqRatio))
	record(91, "code mode: input tokens over the task (body bytes / 4)", "≥ 50% fewer",
		fmt.Sprintf("%d: %.1f%% fewer %s", ct, 100*saved, verdict(saved >= 0.5)), fmt.Sprintf("%d (tool loop)", lt), fmt.Sprintf("%.3f", float64(ct)/float64(lt)))
}

// scriptOverhead runs the chain script n times in process against a
// Caller that answers from the chain's data, and returns the script's own
// time per tool call: its time less the time spent in the Caller.
func scriptOverhead(b *testing.B, n int) time.Duration {
	r := codemode.NewRunner(config.CodeMode{})
	var tools []codemode.Tool
	for _, s := range []string{"tickets", "people", "teams"} {
		tools = append(tools, codemode.ToolsOf(s, []mcp.Tool{chainTool(s)})...)
	}
	bind := codemode.Bind([]string{"tickets", "people", "teams"}, tools)
	var inCaller time.Duration
	caller := func(_ context.Context, server, _ string, args json.RawMessage) (*mcp.CallToolResult, error) {
		t0 := time.Now()
		res := chainResult(server, args)
		inCaller += time.Since(t0)
		return res, nil
	}
	calls := 0
	start := time.Now()
	for range n {
		out, err := r.Run(context.Background(), codemode.Script{Code: chainScript, Tools: bind, Call: caller})
		if err != nil {
			b.Fatal(err)
		}
		calls += out.Calls
	}
	total := time.Since(start)
	return (total - inCaller) / time.Duration(calls)
}

// runaways runs each runaway script through the coder agent (the bound
// must be named in what the model gets back) and in process (where it
// stopped: steps, time, bytes allocated).
func runaways(b *testing.B, g *gateway, llm *fakellm.Server) {
	lim := config.CodeMode{}
	lim.ApplyDefaults(time.Minute)
	for _, c := range []struct{ name, code, bound string }{
		{"endless loop", "while True:\n    pass\n", "max_steps"},
		{"doubling string", "s = 'x'\nfor i in range(64):\n    s = s + s\n", "max_value_bytes"},
		{"deep structure", "x = []\nwhile True:\n    x = [x]\n", "max_steps"},
	} {
		n := len(llm.ChatRequests())
		llm.Script(fakellm.ToolCalls(fakellm.Call{Name: "run_script", Args: mustJSON(b, map[string]string{"code": c.code})}), fakellm.Text("stopped"))
		mustLoad(b, g, load.Options{URL: g.agentURL("coder"), Style: load.Sessionless, Concurrency: 1, Requests: 1,
			Tool: "send_message", Arguments: map[string]any{"message": "run away"}})
		reqs := llm.ChatRequests()[n:]
		gotBound := len(reqs) == 2 && strings.Contains(string(reqs[1].Body), c.bound)
		if !gotBound {
			b.Errorf("%s: the model was not told of %s", c.name, c.bound)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		out, err := codemode.NewRunner(lim).Run(context.Background(), codemode.Script{Code: c.code})
		took := time.Since(t0)
		runtime.ReadMemStats(&after)
		var e *codemode.Error
		ok := errors.As(err, &e) && e.Bound == c.bound && gotBound && out.Steps <= lim.MaxSteps
		alloc := float64(after.TotalAlloc - before.TotalAlloc)
		b.Logf("runaway %s: %v after %d steps, %s, %s allocated", c.name, err, out.Steps, took.Round(time.Millisecond), fmtMB(alloc))
		record(93, "code mode: runaway "+c.name+" stopped by its bound", c.bound,
			fmt.Sprintf("%s after %d steps, %s, %s allocated %s", boundName(e), out.Steps, took.Round(time.Millisecond), fmtMB(alloc), verdict(ok)), "", "")
	}
}

func boundName(e *codemode.Error) string {
	if e == nil {
		return "not stopped"
	}
	return e.Bound
}

// runawayLoad measures a proxied call's p50 idle (before and after; the
// lower is the baseline), then with max_concurrent runaway scripts running
// on the toolbox of the same gateway (a fifth script, refused, tells that
// they all run).
func runawayLoad(b *testing.B, g *gateway) {
	o := load.Options{URL: g.agentURL("px"), Style: load.Session, Concurrency: 1, Requests: calls(b),
		Tool: "echo", Arguments: map[string]any{"text": "hi"}}
	idle := runLoad(b, o)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range codeModeMaxConcurrent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				text, err := callTool(ctx, g.agentURL("box"), "run_script", map[string]any{"code": "while True:\n    pass\n"})
				switch {
				case ctx.Err() != nil:
				case strings.Contains(text, "max_concurrent"): // a probe held the slot: again
				default:
					b.Errorf("a runaway script ended before it was canceled: %q, %v", text, err)
					return
				}
			}
		}()
	}
	var last string
	full := func() bool { // a script past max_concurrent is refused: all are running
		text, err := callTool(context.Background(), g.agentURL("box"), "run_script", map[string]any{"code": "x = 1"})
		last = fmt.Sprintf("%q, %v", text, err)
		return strings.Contains(text, "max_concurrent")
	}
	deadline := time.Now().Add(time.Minute)
	for !full() {
		if time.Now().After(deadline) {
			b.Fatalf("the runaway scripts did not start; a probe got %s; gateway: %v", last, g.problems(3))
		}
	}
	loaded := runLoad(b, o)
	stillRunning := full()
	cancel()
	wg.Wait()
	if !stillRunning {
		b.Errorf("the runaway scripts ended before the measurement did")
	}
	// Idle again after: the lower idle p50 is the baseline.
	if again := runLoad(b, o); again.Percentile(50) < idle.Percentile(50) {
		idle = again
	}
	ratio := float64(loaded.Percentile(50)) / float64(idle.Percentile(50))
	b.ReportMetric(ratio, "p50-with-runaways-x")
	b.Logf("proxied call, c=1: idle %s; with %d runaway scripts %s", idle, codeModeMaxConcurrent, loaded)
	record(94, fmt.Sprintf("code mode: proxied call p50 with %d runaway scripts, against idle", codeModeMaxConcurrent), "≤ 2x",
		fmt.Sprintf("%s %s", us(loaded.Percentile(50)), verdict(ratio <= 2)), us(idle.Percentile(50))+" (idle)", fmt.Sprintf("%.2f", ratio))
}

// callTool makes one tools/call with mcp-go's client and returns the
// result's text.
func callTool(ctx context.Context, url, tool string, args map[string]any) (string, error) {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return "", err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return "", err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var text []string
	for _, part := range res.Content {
		if t, ok := part.(mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	return strings.Join(text, "\n"), nil
}

const codeModeMaxConcurrent = 4

const codeModeConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-bench", timeout: 60s}
mcp:
  servers:
    tickets: {url: %q, timeout: 30s}
    people: {url: %q, timeout: 30s}
    teams: {url: %q, timeout: 30s}
    echo: {url: %q, timeout: 30s}
agents:
  loop: {servers: [tickets, people, teams], max_iterations: 20}
  coder: {servers: [tickets, people, teams], tool_mode: code}
  px: {kind: proxy, servers: [echo]}
  box: {kind: toolbox, servers: [echo], code_mode: {max_concurrent: 4, max_steps: 1000000000000, timeout: 10m}}
`

// The task: ticket T-100's parent's assignee's team's on-call person's
// manager's team's escalation ticket.
const chainTask = "Find the escalation ticket for T-100: take its parent ticket's assignee, their team's on-call person, " +
	"that person's manager, and the escalation ticket of the manager's team. Say its status and title."

const chainAnswer = "Escalation ticket T-9 (open): Refund service returns 502. On call: sam; manager: kim."

// chainScript is what a model writes for the task in code mode.
const chainScript = `t = tickets.get_ticket(id="T-100")
t = tickets.get_ticket(id=t["parent"])
p = people.get_person(login=t["assignee"])
team = teams.get_team(name=p["team"])
oncall = people.get_person(login=team["oncall"])
boss = people.get_person(login=oncall["manager"])
esc = teams.get_team(name=boss["team"])
e = tickets.get_ticket(id=esc["escalation"])
result = {"ticket": e["id"], "status": e["status"], "title": e["title"], "oncall": oncall["login"], "manager": boss["login"]}
`

// chainCalls are the tool loop's calls for the task, each with what the
// previous result said.
var chainCalls = []struct{ server, tool, args string }{
	{"tickets", "get_ticket", `{"id":"T-100"}`},
	{"tickets", "get_ticket", `{"id":"T-57"}`},
	{"people", "get_person", `{"login":"dana"}`},
	{"teams", "get_team", `{"name":"payments"}`},
	{"people", "get_person", `{"login":"sam"}`},
	{"people", "get_person", `{"login":"kim"}`},
	{"teams", "get_team", `{"name":"platform"}`},
	{"tickets", "get_ticket", `{"id":"T-9"}`},
}

// chainData is each server's records by key, each with the details a
// real service returns (a description and a history).
var chainData = map[string]map[string]map[string]any{
	"tickets": {
		"T-100": {"id": "T-100", "title": "Checkout times out for EU customers", "status": "open", "parent": "T-57", "assignee": "ari"},
		"T-57":  {"id": "T-57", "title": "Payments latency epic", "status": "in_progress", "parent": "", "assignee": "dana"},
		"T-9":   {"id": "T-9", "title": "Refund service returns 502", "status": "open", "parent": "", "assignee": "kim"},
	},
	"people": {
		"dana": {"login": "dana", "name": "Dana Ruiz", "team": "payments", "manager": "lee"},
		"sam":  {"login": "sam", "name": "Sam Okafor", "team": "payments", "manager": "kim"},
		"kim":  {"login": "kim", "name": "Kim Larsen", "team": "platform", "manager": "vp-eng"},
	},
	"teams": {
		"payments": {"name": "payments", "oncall": "sam", "escalation": "T-31", "channel": "#payments"},
		"platform": {"name": "platform", "oncall": "joe", "escalation": "T-9", "channel": "#platform"},
	},
}

var chainKeys = map[string]string{"tickets": "id", "people": "login", "teams": "name"}

func chainTool(server string) mcp.Tool {
	switch server {
	case "tickets":
		return mcp.NewTool("get_ticket", mcp.WithDescription("Gets a ticket by id, with its description and history."), mcp.WithString("id", mcp.Required()))
	case "people":
		return mcp.NewTool("get_person", mcp.WithDescription("Gets a person by login: name, team, manager, profile."), mcp.WithString("login", mcp.Required()))
	}
	return mcp.NewTool("get_team", mcp.WithDescription("Gets a team by name: on-call person, escalation ticket, channel."), mcp.WithString("name", mcp.Required()))
}

// chainResult is server's answer to a call with args.
func chainResult(server string, args json.RawMessage) *mcp.CallToolResult {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	key, _ := a[chainKeys[server]].(string)
	rec, ok := chainData[server][key]
	if !ok {
		return mcp.NewToolResultError("no " + key)
	}
	out := map[string]any{}
	for k, v := range rec {
		out[k] = v
	}
	out["description"] = strings.Repeat("Details of "+key+" as the service keeps them: owner notes, links and context. ", 8)
	var history []any
	for i := range 5 {
		history = append(history, map[string]any{"at": fmt.Sprintf("2026-11-%02dT10:00:00Z", i+1), "by": "bot", "change": fmt.Sprintf("updated field %d of %s", i, key)})
	}
	out["history"] = history
	text, _ := json.Marshal(out)
	return mcp.NewToolResultStructured(out, string(text))
}

// chainDownstream is one MCP server of the chain, in this process.
type chainDownstream struct{ ts *httptest.Server }

func (d *chainDownstream) url() string { return d.ts.URL + "/mcp" }

func newChainDownstreams(b *testing.B) map[string]*chainDownstream {
	out := map[string]*chainDownstream{}
	for _, name := range []string{"tickets", "people", "teams"} {
		s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(false))
		s.AddTool(chainTool(name), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args, _ := json.Marshal(req.GetArguments())
			return chainResult(name, args), nil
		})
		d := &chainDownstream{ts: httptest.NewServer(server.NewStreamableHTTPServer(s))}
		b.Cleanup(d.ts.Close)
		out[name] = d
	}
	return out
}
