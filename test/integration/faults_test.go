package integration

// Fault tests: the real binary against downstream servers and a model that
// fail in the ways real ones do. Every scenario checks three things: the
// caller gets a clear answer (an isError result naming what failed and the
// request id, an error result fed to the model while the run goes on, or a
// degraded get_health) and never a hung call; the outcome counters moved;
// and the gateway's goroutines return to their baseline afterwards. The rig
// is in faultrig_test.go.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

func TestFaultDownstream(t *testing.T) {
	t.Parallel() // its own gateway process and fakes; mostly waiting on timers
	r := startFaultRig(t, "")
	// Warm up: sessions to flaky and blinker exist and their tools are cached.
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "w1", Name: "flaky__echo", Args: json.RawMessage(`{"text":"hi"}`)}), fakellm.Text("warm"))
	r.answer(t, "worker", "warm-1", "warm up")
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "w3", Name: "sticky__echo"}), fakellm.Text("warm"))
	r.answer(t, "waiter", "warm-3", "warm up")
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "w2", Name: "blinker__echo", Args: json.RawMessage(`{"text":"hi"}`)}), fakellm.Text("warm"))
	r.answer(t, "blink", "warm-2", "warm up")
	if got := r.toolResult(t, "w1"); got != "echo: hi" {
		t.Fatalf("warm-up tool result %q", got)
	}
	base := r.fltBaseline(t)

	// Each case: the model calls tool, the call fails as described, the
	// model is told (want in its tool result) and answers; the run is not
	// an error.
	for _, c := range []struct {
		name, agent, tool, args string
		want                    []string // in the tool result the model got
		outcome                 string   // pallasgw_downstream_calls_total
		server                  string
		before                  func(t *testing.T)
		after                   func(t *testing.T)
	}{
		{name: "hang ended by the per-server timeout", agent: "worker", tool: "flaky__hang", server: "flaky", outcome: "timeout",
			want: []string{"Error: ", `downstream "flaky"`, `tools/call "hang"`, "no answer within the server's timeout of 2s"},
			after: func(t *testing.T) {
				fltRecv(t, r.flaky.hangStarted, time.Second, "the hang tool to start")
				if err := fltRecv(t, r.flaky.hangEnded, 10*time.Second, "the hang tool's context to end"); err == nil {
					t.Error("the hang tool's context ended without an error")
				}
			}},
		{name: "slow answer within the timeout", agent: "waiter", tool: "sticky__slow", args: `{"ms":700}`, server: "sticky", outcome: "ok",
			want: []string{"slow but sure"}},
		{name: "stream dropped mid-call", agent: "waiter", tool: "sticky__drop", server: "sticky", outcome: "unavailable",
			want: []string{"Error: ", `downstream "sticky"`, `tools/call "drop"`, "session lost during the call"}},
		{name: "garbage instead of JSON", agent: "waiter", tool: "sticky__garbage", server: "sticky", outcome: "error",
			want: []string{"Error: ", `downstream "sticky"`, `tools/call "garbage"`}},
		{name: "JSON that is not JSON-RPC", agent: "waiter", tool: "sticky__wrongrpc", server: "sticky", outcome: "error",
			want: []string{"Error: ", `downstream "sticky"`, `tools/call "wrongrpc"`}},
		{name: "connection refused mid-life", agent: "blink", tool: "blinker__echo", args: `{"text":"anyone?"}`, server: "blinker", outcome: "unavailable",
			want:   []string{"Error: ", `downstream "blinker"`, "downstream unavailable", "connection refused"},
			before: func(*testing.T) { r.blinker.refuse() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before(t)
			}
			calls := r.fltCounter(t, "pallasgw_downstream_calls_total", map[string]string{"server": c.server})
			var outcome *fltCounter
			if c.outcome != "" {
				outcome = r.fltCounter(t, "pallasgw_downstream_calls_total", map[string]string{"server": c.server, "outcome": c.outcome})
			}
			ok := r.fltCounter(t, "pallasgw_tool_calls_total", map[string]string{"agent": c.agent, "tool": "send_message", "outcome": "ok"})
			args := c.args
			if args == "" {
				args = "{}"
			}
			id := "call-" + strings.ReplaceAll(c.name, " ", "-")
			r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: id, Name: c.tool, Args: json.RawMessage(args)}), fakellm.Text("carried on"))
			if got := r.answer(t, c.agent, "rid-"+id, "use the tool"); got != "carried on" {
				t.Fatalf("answer %q", got)
			}
			got := r.toolResult(t, id)
			t.Logf("the model got: %s", got)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("tool result %q lacks %q", got, w)
				}
			}
			if c.after != nil {
				c.after(t)
			}
			calls.grew(t, 1)
			if outcome != nil {
				outcome.grew(t, 1)
			}
			ok.grew(t, 1)
			if c.server != "blinker" {
				r.flaky.ts.CloseClientConnections()
			}
			r.fltSettle(t, base)
		})
	}

	t.Run("refused from the start: degraded health, the run goes on", func(t *testing.T) {
		h := r.health(t, "lonely")
		if h["status"] != "degraded" || !strings.Contains(h["message"], "MCP server gone unreachable") || !strings.Contains(h["message"], "connection refused") {
			t.Fatalf("get_health of lonely = %v", h)
		}
		r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-gone", Name: "gone__echo"}), fakellm.Text("managed without"))
		if got := r.answer(t, "lonely", "rid-gone", "try"); got != "managed without" {
			t.Fatalf("answer %q", got)
		}
		reqs := r.llm.ChatRequests()
		if sys := reqs[len(reqs)-2].Chat.System; !strings.Contains(sys, "server gone is unavailable") {
			t.Errorf("the model was not told that gone is unavailable: %q", sys)
		}
		if got := r.toolResult(t, "c-gone"); !strings.HasPrefix(got, "Error: ") {
			t.Errorf("tool result for a tool of an unavailable server: %q", got)
		}
		if v, _ := r.metric(t, `pallasgw_agent_health{agent="lonely"}`); v != 0.5 {
			t.Errorf("pallasgw_agent_health{agent=lonely} = %v, want 0.5", v)
		}
		r.fltSettle(t, base)
	})

	t.Run("the service keeps working", func(t *testing.T) {
		r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-after", Name: "flaky__echo", Args: json.RawMessage(`{"text":"still here"}`)}), fakellm.Text("fine"))
		r.answer(t, "worker", "rid-after", "again")
		if got := r.toolResult(t, "c-after"); got != "echo: still here" {
			t.Fatalf("tool result after the faults: %q", got)
		}
	})
}

// The same downstream faults through proxy agents, whose callers get the
// downstream's failure directly: an isError result that names the server,
// the failure and the request id, counted by outcome, nothing left behind.
func TestFaultDownstreamThroughProxy(t *testing.T) {
	r := startFaultRig(t, "")
	for _, agent := range []string{"relay", "relaysticky"} {
		if res := r.send(t, agent, "warm-"+agent, "echo", map[string]any{"text": "hi"}); res.IsError || fltText(res) != "echo: hi" {
			t.Fatalf("warm-up through %s: %s", agent, fltText(res))
		}
	}
	base := r.fltBaseline(t)
	for _, c := range []struct {
		name, agent, tool, server, outcome string
		want                               []string
	}{
		{"hang ended by the per-server timeout", "relay", "hang", "flaky", "timeout",
			[]string{`downstream "flaky"`, `tools/call "hang"`, "no answer within the server's timeout of 2s"}},
		{"stream dropped mid-call", "relaysticky", "drop", "sticky", "unavailable",
			[]string{`downstream "sticky"`, `tools/call "drop"`, "session lost during the call"}},
		{"garbage instead of JSON", "relaysticky", "garbage", "sticky", "error",
			[]string{`downstream "sticky"`, `tools/call "garbage"`}},
		{"not JSON-RPC 2.0", "relaysticky", "wrongrpc", "sticky", "error",
			[]string{`downstream "sticky"`, `tools/call "wrongrpc"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome := r.fltCounter(t, "pallasgw_downstream_calls_total", map[string]string{"server": c.server, "outcome": c.outcome})
			rid := "rid-relay-" + c.tool
			res := r.send(t, c.agent, rid, c.tool, map[string]any{})
			got := fltText(res)
			t.Logf("the caller got: %s", got)
			if !res.IsError {
				t.Fatalf("want an isError result, got %s", got)
			}
			for _, w := range append(c.want, "(request id "+rid+")") {
				if !strings.Contains(got, w) {
					t.Errorf("result %q lacks %q", got, w)
				}
			}
			if c.tool == "hang" { // the downstream's handler was told the call ended
				fltRecv(t, r.flaky.hangStarted, time.Second, "the hang tool to start")
				if err := fltRecv(t, r.flaky.hangEnded, 10*time.Second, "the hang tool's context to end"); err == nil {
					t.Error("the hang tool's context ended without an error")
				}
			}
			outcome.grew(t, 1)
			r.fltSettle(t, base)
		})
	}
	// The proxies still answer.
	for _, agent := range []string{"relay", "relaysticky"} {
		if res := r.send(t, agent, "after-"+agent, "echo", map[string]any{"text": "still"}); res.IsError || fltText(res) != "echo: still" {
			t.Errorf("%s after the faults: %s", agent, fltText(res))
		}
	}
}

func TestFaultLLM(t *testing.T) {
	t.Parallel() // its own gateway process and fakes; mostly waiting on timers
	r := startFaultRig(t, "")
	r.answer(t, "talker", "warm", "warm up")
	r.answer(t, "thinker", "warm", "warm up")
	base := r.fltBaseline(t)
	// thinker has time for the retries; talker's 2 s agent timeout ends the
	// hang.
	for _, c := range []struct {
		name, agent string
		steps       []fakellm.Step
		want        []string
		llm, run    string // outcomes of pallasgw_llm_requests_total and pallasgw_tool_calls_total
		check       func(t *testing.T, steps []fakellm.Step)
	}{
		{name: "429 then 500s exhaust the retries", agent: "thinker",
			steps: []fakellm.Step{fakellm.Status(429, 20*time.Millisecond), fakellm.Status(500), fakellm.Status(500)},
			want:  []string{"thinker: LLM provider failed: openai.fake-model", "HTTP 500"}, llm: "error", run: "error",
			check: func(t *testing.T, _ []fakellm.Step) {
				if n := r.llm.Pending(); n != 0 {
					t.Errorf("%d scripted answers left: the retries were not all made", n)
				}
			}},
		{name: "hang mid-stream ended by the agent timeout", agent: "talker",
			steps: []fakellm.Step{fakellm.Hang()},
			want:  []string{"talker: agent timeout 2s exceeded", "LLM provider failed"}, llm: "timeout", run: "timeout",
			check: func(t *testing.T, steps []fakellm.Step) {
				fltRecv(t, steps[0].Disconnected(), 10*time.Second, "the model stream to be closed")
			}},
		{name: "malformed chunk", agent: "thinker",
			steps: []fakellm.Step{fakellm.Text("half an answer").Quirks(fakellm.QuirkMalformedChunk)},
			want:  []string{"LLM provider failed", "malformed stream chunk"}, llm: "error", run: "error"},
		{name: "error event mid-stream", agent: "thinker",
			steps: []fakellm.Step{fakellm.StreamError("the GPU caught fire")},
			want:  []string{"LLM provider failed", "the GPU caught fire"}, llm: "error", run: "error"},
		{name: "stream without finish_reason", agent: "thinker",
			steps: []fakellm.Step{fakellm.Text("and then").Quirks(fakellm.QuirkNoFinishReason)},
			want:  []string{"LLM provider failed", "without finish_reason"}, llm: "error", run: "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			llmCount := r.fltCounter(t, "pallasgw_llm_requests_total",
				map[string]string{"agent": c.agent, "provider": "openai", "model": "fake-model", "outcome": c.llm})
			runCount := r.fltCounter(t, "pallasgw_tool_calls_total", map[string]string{"agent": c.agent, "tool": "send_message", "outcome": c.run})
			r.llm.Script(c.steps...)
			rid := "rid-" + strings.ReplaceAll(c.name, " ", "-")
			text := r.failure(t, c.agent, rid, "think")
			t.Logf("the caller got: %s", text)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("error %q lacks %q", text, w)
				}
			}
			if strings.Contains(text, "sk-fault-test") {
				t.Errorf("the API key leaked into the error: %q", text)
			}
			if c.check != nil {
				c.check(t, c.steps)
			}
			llmCount.grew(t, 1)
			runCount.grew(t, 1)
			r.fltSettle(t, base)
		})
	}
	if got := r.answer(t, "talker", "after", "still there?"); got != "echo: still there?" {
		t.Fatalf("answer after the faults: %q", got)
	}
}

func TestFaultClientDisconnect(t *testing.T) {
	r := startFaultRig(t, "")
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "w", Name: "sticky__echo"}), fakellm.Text("warm"))
	r.answer(t, "waiter", "warm", "warm up")
	r.answer(t, "thinker", "warm", "warm up")
	base := r.fltBaseline(t)

	t.Run("while the model streams", func(t *testing.T) {
		canceled := r.fltCounter(t, "pallasgw_tool_calls_total", map[string]string{"agent": "thinker", "tool": "send_message", "outcome": "canceled"})
		llmCanceled := r.fltCounter(t, "pallasgw_llm_requests_total", map[string]string{"agent": "thinker", "outcome": "canceled"})
		hang := fakellm.Hang()
		r.llm.Script(hang)
		disconnect := disconnectingCall(t, r.Base+"/agents/thinker/mcp", "rid-gone-client-1")
		fltRecv(t, hang.Started(), 10*time.Second, "the model stream to start")
		disconnect()
		fltRecv(t, hang.Disconnected(), 10*time.Second, "the gateway to close the model stream")
		canceled.grew(t, 1)
		llmCanceled.grew(t, 1)
		r.fltSettle(t, base)
	})

	t.Run("while a downstream tool runs", func(t *testing.T) {
		canceled := r.fltCounter(t, "pallasgw_tool_calls_total", map[string]string{"agent": "waiter", "tool": "send_message", "outcome": "canceled"})
		downCanceled := r.fltCounter(t, "pallasgw_downstream_calls_total", map[string]string{"server": "sticky", "outcome": "canceled"})
		r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-hang", Name: "sticky__hang"}))
		asked := len(r.llm.ChatRequests()) + 1
		disconnect := disconnectingCall(t, r.Base+"/agents/waiter/mcp", "rid-gone-client-2")
		fltRecv(t, r.flaky.hangStarted, 10*time.Second, "the downstream tool to start")
		disconnect()
		if err := fltRecv(t, r.flaky.hangEnded, 10*time.Second, "the downstream tool's context to end"); err == nil {
			t.Error("the downstream tool's context ended without an error")
		}
		canceled.grew(t, 1)
		downCanceled.grew(t, 1)
		r.flaky.ts.CloseClientConnections()
		r.fltSettle(t, base)
		if n := len(r.llm.ChatRequests()); n != asked {
			t.Errorf("the model was asked again after the client left (%d requests, want %d)", n, asked)
		}
	})
	if got := r.answer(t, "talker", "after", "still there?"); got != "echo: still there?" {
		t.Fatalf("answer after the disconnects: %q", got)
	}
}

func TestFaultStdioCrash(t *testing.T) {
	r := startFaultRig(t, buildCrashServer(t))
	pidCall := func(id string) string {
		t.Helper()
		r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: id, Name: "proc__pid"}), fakellm.Text("pid noted"))
		r.answer(t, "runner", "rid-"+id, "what is your pid?")
		return r.toolResult(t, id)
	}
	first := pidCall("pid-1")
	if h := r.health(t, "runner"); h["status"] != "ok" {
		t.Fatalf("get_health before the crash = %v", h)
	}
	base := r.fltBaseline(t)

	unavailable := r.fltCounter(t, "pallasgw_downstream_calls_total", map[string]string{"server": "proc", "outcome": "unavailable"})
	r.llm.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-crash", Name: "proc__crash"}), fakellm.Text("survived"))
	if got := r.answer(t, "runner", "rid-crash", "crash, please"); got != "survived" {
		t.Fatalf("answer %q", got)
	}
	got := r.toolResult(t, "c-crash")
	t.Logf("the model got: %s", got)
	for _, w := range []string{"Error: ", `downstream "proc"`, `tools/call "crash"`, "downstream unavailable"} {
		if !strings.Contains(got, w) {
			t.Errorf("tool result %q lacks %q", got, w)
		}
	}
	unavailable.grew(t, 1)
	if !r.logged("crashserver: crashing on request") {
		t.Error("the server's stderr was not logged")
	}

	second := pidCall("pid-2")
	if second == first || second == "" || strings.HasPrefix(second, "Error") {
		t.Fatalf("after the crash: pid %q, before %q: the server was not restarted", second, first)
	}
	r.fltSettle(t, base)
}
