package integration

// The LLM agent runtime end to end ("Agents think"): the real binary, fake
// OpenAI and Anthropic servers (test/fakellm), an mcp-go downstream tool
// server, and the Go SDK client or a raw HTTP client.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// loopAgents: x speaks OpenAI, xa Anthropic; both use the tool server with
// its admin tools denied.
const loopAgents = `  x:
    instruction: You are X.
    servers: [srv]
    tools: {deny: ["srv__admin_*"]}
  xa:
    model: anthropic.fake-model
    instruction: You are XA.
    servers: [srv]
    tools: {deny: ["srv__admin_*"]}
`

// providerCase is one provider and the agent that uses it.
type providerCase struct {
	name  string // openai | anthropic
	agent string
	fake  func(*llmEnv) *fakellm.Server
}

var providerCases = []providerCase{
	{"openai", "x", func(e *llmEnv) *fakellm.Server { return e.oai }},
	{"anthropic", "xa", func(e *llmEnv) *fakellm.Server { return e.ant }},
}

func callArgs(v string) json.RawMessage { return json.RawMessage(v) }

func TestLLMToolLoop(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			f := pc.fake(e)
			// run scripts the fake, sends message and returns the answer and
			// the chat requests this call made.
			run := func(t *testing.T, message string, steps ...fakellm.Step) (string, []fakellm.Request) {
				t.Helper()
				n := len(f.ChatRequests())
				f.Script(steps...)
				got := e.answer(t, pc.agent, message)
				if f.Pending() != 0 {
					t.Fatalf("%d scripted steps left", f.Pending())
				}
				return got, f.ChatRequests()[n:]
			}

			t.Run("one tool call then the answer", func(t *testing.T) {
				got, reqs := run(t, "say hi through echo",
					fakellm.ToolCalls(fakellm.Call{ID: "c-1", Name: "srv__echo", Args: callArgs(`{"text":"hi"}`)}),
					fakellm.Text("final: hi"))
				if got != "final: hi" || len(reqs) != 2 {
					t.Fatalf("answer %q after %d model requests", got, len(reqs))
				}
				if tools := toolsOffered(reqs[0]); tools != "srv__dotted_name,srv__echo,srv__fail,srv__image,srv__slow" {
					t.Errorf("tools offered = %s", tools)
				}
				if reqs[0].Chat.Model != "fake-model" || !strings.Contains(reqs[0].Chat.System, "You are X") {
					t.Errorf("model %q system %q", reqs[0].Chat.Model, reqs[0].Chat.System)
				}
				res, ok := findToolResult(reqs[1], "c-1")
				if !ok || res.Text != "echo: hi" || res.IsError {
					t.Fatalf("tool result for c-1 = %+v (found %v); messages %q", res, ok, chatRoles(reqs[1]))
				}
				// The assistant turn that asked for the call precedes its result.
				asst := reqs[1].Chat.Messages[res.Index-1]
				if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "c-1" || asst.ToolCalls[0].Name != "srv__echo" {
					t.Errorf("message before the result = %+v", asst)
				}
			})

			t.Run("sanitised name leads back to the tool", func(t *testing.T) {
				got, reqs := run(t, "dots",
					fakellm.ToolCalls(fakellm.Call{ID: "c-dot", Name: "srv__dotted_name"}),
					fakellm.Text("dots fine"))
				if got != "dots fine" {
					t.Fatalf("answer %q", got)
				}
				if res, ok := findToolResult(reqs[1], "c-dot"); !ok || res.Text != "dotted ok" || res.IsError {
					t.Errorf("result = %+v (found %v)", res, ok)
				}
			})

			t.Run("malformed arguments are an error result", func(t *testing.T) {
				got, reqs := run(t, "garbled",
					fakellm.ToolCalls(fakellm.Call{ID: "c-m", Name: "srv__echo", Args: callArgs(`{"text": "unterminated`)}),
					fakellm.Text("fixed it"))
				if got != "fixed it" {
					t.Fatalf("answer %q", got)
				}
				if res, ok := findToolResult(reqs[1], "c-m"); !ok || !res.IsError || !strings.Contains(res.Text, "not a JSON object") {
					t.Errorf("result = %+v (found %v)", res, ok)
				}
			})

			t.Run("two parallel tool calls", func(t *testing.T) {
				got, reqs := run(t, "two at once",
					fakellm.ToolCalls(
						fakellm.Call{ID: "c-a", Name: "srv__echo", Args: callArgs(`{"text":"alpha"}`)},
						fakellm.Call{ID: "c-b", Name: "srv__echo", Args: callArgs(`{"text":"beta"}`)}),
					fakellm.Text("both done"))
				if got != "both done" {
					t.Fatalf("answer %q", got)
				}
				for id, want := range map[string]string{"c-a": "echo: alpha", "c-b": "echo: beta"} {
					if res, ok := findToolResult(reqs[1], id); !ok || res.Text != want || res.IsError {
						t.Errorf("result %s = %+v (found %v)", id, res, ok)
					}
				}
			})

			t.Run("failing tool is an error result", func(t *testing.T) {
				got, reqs := run(t, "try the failing tool",
					fakellm.ToolCalls(fakellm.Call{ID: "c-f", Name: "srv__fail"}),
					fakellm.Text("recovered"))
				if got != "recovered" {
					t.Fatalf("answer %q", got)
				}
				if res, ok := findToolResult(reqs[1], "c-f"); !ok || !res.IsError || !strings.Contains(res.Text, "boom: disk on fire") {
					t.Errorf("result = %+v (found %v)", res, ok)
				}
			})

			t.Run("unknown tool is an error result", func(t *testing.T) {
				got, reqs := run(t, "call something odd",
					fakellm.ToolCalls(fakellm.Call{ID: "c-u", Name: "nope__missing", Args: callArgs(`{}`)}),
					fakellm.Text("ok without it"))
				if got != "ok without it" {
					t.Fatalf("answer %q", got)
				}
				if res, ok := findToolResult(reqs[1], "c-u"); !ok || !res.IsError || !strings.Contains(res.Text, "unknown tool") {
					t.Errorf("result = %+v (found %v)", res, ok)
				}
			})

			t.Run("denied tool is not offered and refused", func(t *testing.T) {
				got, reqs := run(t, "wipe it",
					fakellm.ToolCalls(fakellm.Call{ID: "c-d", Name: "srv__admin_wipe"}),
					fakellm.Text("refused"))
				if got != "refused" {
					t.Fatalf("answer %q", got)
				}
				if strings.Contains(toolsOffered(reqs[0]), "admin") {
					t.Errorf("denied tool offered: %s", toolsOffered(reqs[0]))
				}
				if res, ok := findToolResult(reqs[1], "c-d"); !ok || !res.IsError || !strings.Contains(res.Text, "denied") {
					t.Errorf("result = %+v (found %v)", res, ok)
				}
				for _, c := range e.srv.called() {
					if c == "admin_wipe" {
						t.Fatal("the denied tool reached the downstream")
					}
				}
			})
		})
	}
	m := e.metricsText(t)
	if !strings.Contains(m, `pallasgw_policy_decisions_total{agent="x",caller="other",decision="deny",reason=`) {
		t.Errorf("no policy deny decision counted for x:\n%s", linesWith(m, "pallasgw_policy_decisions_total"))
	}
}

func TestLLMIterationLimit(t *testing.T) {
	e := startLLM(t, `  looper:
    servers: [srv]
    max_iterations: 2
`, llmOpts{})
	e.oai.Script(
		fakellm.ToolCalls(fakellm.Call{ID: "l-1", Name: "srv__echo", Args: callArgs(`{"text":"again"}`)}),
		fakellm.ToolCalls(fakellm.Call{ID: "l-2", Name: "srv__echo", Args: callArgs(`{"text":"and again"}`)}),
		fakellm.Text("never asked for"),
	)
	res := e.send(t, "looper", map[string]any{"message": "loop forever"})
	text := resultText(res)
	if res.IsError || !strings.Contains(strings.ToLower(text), "iteration limit") {
		t.Fatalf("result (isError %v): %q", res.IsError, text)
	}
	t.Logf("result: %s", text)
	if n := len(e.oai.ChatRequests()); n != 2 {
		t.Errorf("model asked %d times, want 2", n)
	}
	if calls := e.srv.called(); len(calls) != 1 {
		t.Errorf("downstream calls %v, want only the first iteration's", calls)
	}
	e.waitSeries(t, `pallasgw_agent_iteration_limit_total{agent="looper"}`, 1)
}

func TestLLMSubAgent(t *testing.T) {
	e := startLLM(t, `  boss:
    instruction: You are the boss.
    agents: [helper]
  helper:
    instruction: You are the helper.
    servers: [srv]
`, llmOpts{})
	e.oai.Script(
		fakellm.ToolCalls(fakellm.Call{ID: "c-h", Name: "helper", Args: callArgs(`{"message":"please help"}`)}),
		fakellm.Text("helper says hi"),
		fakellm.Text("boss: helper said hi"),
	)
	if got := e.answer(t, "boss", "delegate"); got != "boss: helper said hi" {
		t.Fatalf("answer %q", got)
	}
	reqs := e.oai.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	if toolsOffered(reqs[0]) != "helper" {
		t.Errorf("boss offered %s", toolsOffered(reqs[0]))
	}
	if !strings.Contains(reqs[1].Chat.System, "You are the helper.") || reqs[1].Chat.LastUserText() != "please help" {
		t.Errorf("helper's request: system %q, user %q", reqs[1].Chat.System, reqs[1].Chat.LastUserText())
	}
	if toolsOffered(reqs[1]) != "srv__admin_wipe,srv__dotted_name,srv__echo,srv__fail,srv__image,srv__slow" {
		t.Errorf("helper offered %s", toolsOffered(reqs[1]))
	}
	if res, ok := findToolResult(reqs[2], "c-h"); !ok || res.Text != "helper says hi" || res.IsError {
		t.Errorf("helper result = %+v (found %v)", res, ok)
	}
	// The sub-agent's progress is relayed inside the parent's, in order.
	e.oai.Script(
		fakellm.ToolCalls(fakellm.Call{ID: "c-h2", Name: "helper", Args: callArgs(`{"message":"again"}`)}),
		fakellm.Text("helper again"),
		fakellm.Text("boss again"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := e.rawCall(t, ctx, "boss", map[string]any{"message": "delegate again"}, "sub-tok")
	var got []string
	var result *sseMsg
	for m := s.next(t); m != nil; m = s.next(t) {
		if m.Method == "notifications/progress" {
			got = append(got, m.Params.Message)
		} else if m.Result != nil {
			result = m
		}
	}
	want := []string{"boss step 1 (llm)", "boss step 1 (tool)", "helper/send_message: started",
		"helper/send_message: helper step 1 (llm)", "helper/send_message: completed", "boss step 2 (llm)", "boss: done"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("progress\n got %q\nwant %q", got, want)
	}
	if result == nil || result.Result.IsError || result.Result.Content[0].Text != "boss again" {
		t.Errorf("result %+v", result)
	}
	// In process: helper's own MCP endpoint was never called.
	if m := e.metricsText(t); strings.Contains(m, `pallasgw_tool_calls_total{agent="helper"`) {
		t.Errorf("helper was called over HTTP:\n%s", linesWith(m, "pallasgw_tool_calls_total"))
	}
}

func TestLLMKinds(t *testing.T) {
	e := startLLM(t, `  a: {instruction: "Agent A."}
  b: {model: anthropic.fake-model, instruction: "Agent B.", description: "Knows B things."}
  c: {instruction: "Agent C merges."}
  pipe: {kind: chain, sequence: [a, b]}
  triage: {kind: router, agents: [a, b], model: openai.fake-model}
  panel: {kind: parallel, fan_out: [a, b], fan_in: c}
`, llmOpts{})
	t.Run("chain", func(t *testing.T) {
		no, na := len(e.oai.ChatRequests()), len(e.ant.ChatRequests())
		e.oai.Script(fakellm.Text("A-out"))
		e.ant.Script(fakellm.Text("B-out"))
		if got := e.answer(t, "pipe", "start the chain"); got != "B-out" {
			t.Fatalf("answer %q", got)
		}
		if u := e.oai.ChatRequests()[no].Chat.LastUserText(); u != "start the chain" {
			t.Errorf("a got %q", u)
		}
		if u := e.ant.ChatRequests()[na].Chat.LastUserText(); u != "A-out" {
			t.Errorf("b got %q, want a's output", u)
		}
	})
	t.Run("router", func(t *testing.T) {
		no, na := len(e.oai.ChatRequests()), len(e.ant.ChatRequests())
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{Name: "route_to_agent", Args: callArgs(`{"agent":"b","reason":"B things"}`)}))
		e.ant.Script(fakellm.Text("B-routed"))
		if got := e.answer(t, "triage", "a B question"); got != "B-routed" {
			t.Fatalf("answer %q", got)
		}
		r := e.oai.ChatRequests()[no]
		if toolsOffered(r) != "route_to_agent" || !strings.Contains(r.Chat.System, "Knows B things.") {
			t.Errorf("router request: tools %s system %q", toolsOffered(r), r.Chat.System)
		}
		if u := e.ant.ChatRequests()[na].Chat.LastUserText(); u != "a B question" {
			t.Errorf("b got %q", u)
		}
	})
	t.Run("parallel", func(t *testing.T) {
		no, na := len(e.oai.ChatRequests()), len(e.ant.ChatRequests())
		// a and then c speak OpenAI (c only after both fan_out answers), b Anthropic.
		e.oai.Script(fakellm.Text("A-par"), fakellm.Text("C-merged"))
		e.ant.Script(fakellm.Text("B-par"))
		if got := e.answer(t, "panel", "ask everyone"); got != "C-merged" {
			t.Fatalf("answer %q", got)
		}
		reqs := e.oai.ChatRequests()[no:]
		if len(reqs) != 2 || len(e.ant.ChatRequests())-na != 1 {
			t.Fatalf("requests: openai %d anthropic %d", len(reqs), len(e.ant.ChatRequests())-na)
		}
		in := reqs[1].Chat.LastUserText()
		for _, want := range []string{"ask everyone", "A-par", "B-par"} {
			if !strings.Contains(in, want) {
				t.Errorf("fan_in input lacks %q:\n%s", want, in)
			}
		}
		if !strings.Contains(reqs[1].Chat.System, "Agent C merges.") {
			t.Errorf("fan_in system %q", reqs[1].Chat.System)
		}
	})
}

func TestLLMHistoryReachesModelInOrder(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			f := pc.fake(e)
			n := len(f.ChatRequests())
			f.Script(fakellm.Text("noted"))
			res := e.send(t, pc.agent, map[string]any{
				"message": "the new message",
				"history": []any{
					map[string]any{"role": "user", "content": "h1 question"},
					map[string]any{"role": "assistant", "content": "h2 answer"},
					"junk",
					map[string]any{"role": "system", "content": "sneaky"},
					map[string]any{"role": "user", "content": 7},
					map[string]any{"role": "user", "content": "h3 with picture", "images": []any{map[string]any{"data": base64.StdEncoding.EncodeToString(tinyPNG), "mime_type": "image/png"}}},
					map[string]any{"role": "assistant", "content": "h4 answer"},
				},
			})
			if res.IsError || resultText(res) != "noted" {
				t.Fatalf("result %q (isError %v)", resultText(res), res.IsError)
			}
			r := f.ChatRequests()[n]
			var got []string
			for _, m := range r.Chat.Messages {
				if m.Role != "system" {
					got = append(got, fmt.Sprintf("%s:%s:%d", m.Role, m.Text, len(m.Images)))
				}
			}
			want := []string{"user:h1 question:0", "assistant:h2 answer:0", "user:h3 with picture:1", "assistant:h4 answer:0", "user:the new message:0"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("messages\n got %q\nwant %q", got, want)
			}
		})
	}
	m := e.metricsText(t)
	for _, want := range []string{
		`pallasgw_history_entries_skipped_total{agent="x",reason="not_object"} 1`,
		`pallasgw_history_entries_skipped_total{agent="x",reason="bad_role"} 1`,
		`pallasgw_history_entries_skipped_total{agent="xa",reason="bad_content"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestLLMImagesReachModel(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	formats := map[string]string{"openai": "image_url", "anthropic": "base64"}
	for _, pc := range providerCases {
		t.Run(pc.name, func(t *testing.T) {
			f := pc.fake(e)
			n := len(f.ChatRequests())
			f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-img", Name: "srv__image"}), fakellm.Text("I see two images"))
			res := e.send(t, pc.agent, map[string]any{"message": "look at this",
				"images": []any{map[string]any{"data": base64.StdEncoding.EncodeToString(tinyPNG), "mime_type": "image/png"}}})
			if res.IsError || resultText(res) != "I see two images" {
				t.Fatalf("result %q (isError %v)", resultText(res), res.IsError)
			}
			reqs := f.ChatRequests()[n:]
			checkImg := func(what string, imgs []fakellm.Image) {
				t.Helper()
				if len(imgs) != 1 || imgs[0].Format != formats[pc.name] || imgs[0].MIMEType != "image/png" || !bytes.Equal(imgs[0].Data, tinyPNG) {
					t.Errorf("%s: images %+v, want one %s image/png", what, imgs, formats[pc.name])
				}
			}
			first := reqs[0].Chat.Messages[len(reqs[0].Chat.Messages)-1]
			if first.Role != "user" || first.Text != "look at this" {
				t.Fatalf("last message %+v", first)
			}
			checkImg("user turn", first.Images)
			tr, ok := findToolResult(reqs[1], "c-img")
			if !ok || tr.IsError || !strings.Contains(tr.Text, "a tiny image") {
				t.Fatalf("tool result %+v (found %v): %q", tr, ok, chatRoles(reqs[1]))
			}
			checkImg("tool result", tr.Images)
		})
	}
}

func TestLLMStreamQuirks(t *testing.T) {
	e := startLLM(t, loopAgents+`  usage:
    instruction: counts tokens
`, llmOpts{})
	two := []fakellm.Call{
		{ID: "q-1", Name: "srv__echo", Args: callArgs(`{"text":"one"}`)},
		{ID: "q-2", Name: "srv__echo", Args: callArgs(`{"text":"two"}`)},
	}
	handled := []struct {
		name     string
		provider string
		steps    []fakellm.Step
		agent    string
	}{
		{"no index", "openai", []fakellm.Step{fakellm.ToolCalls(two...).Quirks(fakellm.QuirkNoIndex), fakellm.Text("ok")}, "x"},
		{"changing ids", "openai", []fakellm.Step{fakellm.ToolCalls(two...).Quirks(fakellm.QuirkChangingIDs), fakellm.Text("ok").Quirks(fakellm.QuirkChangingIDs)}, "x"},
		{"null error", "openai", []fakellm.Step{fakellm.ToolCalls(two...).Quirks(fakellm.QuirkNullError), fakellm.Text("ok").Quirks(fakellm.QuirkNullError)}, "x"},
		{"ping", "openai", []fakellm.Step{fakellm.ToolCalls(two...).Quirks(fakellm.QuirkPing), fakellm.Text("ok").Quirks(fakellm.QuirkPing)}, "x"},
		{"ping", "anthropic", []fakellm.Step{fakellm.ToolCalls(two...).Quirks(fakellm.QuirkPing), fakellm.Text("ok").Quirks(fakellm.QuirkPing)}, "xa"},
		{"all at once", "openai", []fakellm.Step{
			fakellm.ToolCalls(two...).Quirks(fakellm.QuirkNoIndex, fakellm.QuirkChangingIDs, fakellm.QuirkCumulativeUsage, fakellm.QuirkNullError, fakellm.QuirkPing),
			fakellm.Text("ok").Quirks(fakellm.QuirkChangingIDs, fakellm.QuirkCumulativeUsage, fakellm.QuirkNullError, fakellm.QuirkPing)}, "x"},
	}
	for _, c := range handled {
		t.Run(c.provider+" "+c.name, func(t *testing.T) {
			f := e.oai
			if c.provider == "anthropic" {
				f = e.ant
			}
			n := len(f.ChatRequests())
			f.Script(c.steps...)
			if got := e.answer(t, c.agent, "quirky"); got != "ok" {
				t.Fatalf("answer %q", got)
			}
			reqs := f.ChatRequests()[n:]
			for id, want := range map[string]string{"q-1": "echo: one", "q-2": "echo: two"} {
				if res, ok := findToolResult(reqs[1], id); !ok || res.Text != want || res.IsError {
					t.Errorf("result %s = %+v (found %v); messages %q", id, res, ok, chatRoles(reqs[1]))
				}
			}
		})
	}
	t.Run("cumulative usage is not summed", func(t *testing.T) {
		e.oai.Script(fakellm.Text("counted, not summed").Usage(50, 3).Quirks(fakellm.QuirkCumulativeUsage))
		if got := e.answer(t, "usage", "count"); got != "counted, not summed" {
			t.Fatalf("answer %q", got)
		}
		e.waitSeries(t, `pallasgw_llm_tokens_total{agent="usage",model="openai.fake-model",type="input"}`, 50)
		e.waitSeries(t, `pallasgw_llm_tokens_total{agent="usage",model="openai.fake-model",type="output"}`, 3)
	})
	failing := []struct {
		name     string
		provider string
		quirk    fakellm.Quirk
	}{
		{"no finish reason", "openai", fakellm.QuirkNoFinishReason},
		{"no finish reason", "anthropic", fakellm.QuirkNoFinishReason},
		{"malformed chunk", "openai", fakellm.QuirkMalformedChunk},
		{"malformed chunk", "anthropic", fakellm.QuirkMalformedChunk},
	}
	for i, c := range failing {
		t.Run(c.provider+" "+c.name, func(t *testing.T) {
			f, agent := e.oai, "x"
			if c.provider == "anthropic" {
				f, agent = e.ant, "xa"
			}
			f.Script(fakellm.Text("this answer is broken").Quirks(c.quirk))
			rid := fmt.Sprintf("rid-quirk-%d", i)
			cs := e.session(t, agent, rid, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "go"}})
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(res)
			if !res.IsError {
				t.Fatalf("not an error result: %q", text)
			}
			t.Logf("error result: %s", text)
			for _, want := range []string{c.provider, "request id " + rid} {
				if !strings.Contains(text, want) {
					t.Errorf("error %q lacks %q", text, want)
				}
			}
		})
	}
}

func TestLLMRetriesThenSucceeds(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	t.Run("openai 429 with retry-after-ms", func(t *testing.T) {
		e.oai.Script(fakellm.Status(429, 30*time.Millisecond).Message("slow down"), fakellm.Text("after the 429"))
		if got := e.answer(t, "x", "retry me"); got != "after the 429" {
			t.Fatalf("answer %q", got)
		}
		if n := len(e.oai.ChatRequests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("anthropic 429 with Retry-After", func(t *testing.T) {
		e.ant.Script(fakellm.Status(429, time.Second), fakellm.Text("after the anthropic 429"))
		if got := e.answer(t, "xa", "retry me"); got != "after the anthropic 429" {
			t.Fatalf("answer %q", got)
		}
		if n := len(e.ant.ChatRequests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
	t.Run("persistent 503 is an error result", func(t *testing.T) {
		e.oai.Script(fakellm.Status(503, 10*time.Millisecond), fakellm.Status(503, 10*time.Millisecond), fakellm.Status(503, 10*time.Millisecond))
		res := e.send(t, "x", map[string]any{"message": "fail"})
		if text := resultText(res); !res.IsError || !strings.Contains(text, "openai") || !strings.Contains(text, "503") || !strings.Contains(text, "request id") {
			t.Fatalf("result (isError %v): %q", res.IsError, text)
		}
	})
}

func TestLLMClientCancel(t *testing.T) {
	e := startLLM(t, loopAgents+`  impatient:
    timeout: 1s
`, llmOpts{})
	cs := e.session(t, "x", "", nil)
	start := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "take your time"}})
			done <- err
		}()
		return done
	}
	t.Run("stops the LLM stream", func(t *testing.T) {
		hang := fakellm.Hang()
		e.oai.Script(hang)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(ctx)
		recvWithin(t, 15*time.Second, "the model stream to start", hang.Started())
		// One call in flight counts once (both were incremented before the
		// model request started).
		if v, _ := e.metric(t, `pallasgw_inflight_requests{agent="x"}`); v != 1 {
			t.Errorf("pallasgw_inflight_requests{agent=\"x\"} = %v during one call, want 1 "+
				"(counted by both gateway/agentroute.go serveAgent and agents/agent.go handleSendMessage)", v)
		}
		cancel()
		recvWithin(t, 15*time.Second, "the model stream to be closed", hang.Disconnected())
		if err := recvWithin(t, 15*time.Second, "CallTool to return", done); err == nil {
			t.Error("CallTool succeeded after cancel")
		}
		e.waitSeries(t, `pallasgw_llm_requests_total{agent="x",model="fake-model",outcome="canceled",provider="openai"}`, 1)
		e.waitSeries(t, `pallasgw_tool_calls_total{agent="x",caller="other",outcome="canceled",tool="send_message"}`, 1)
	})
	t.Run("stops the tool call", func(t *testing.T) {
		n := len(e.oai.ChatRequests())
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-slow", Name: "srv__slow", Args: callArgs(`{"id":"cancel-me"}`)}))
		_, started, ended := e.srv.chans("cancel-me")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(ctx)
		recvWithin(t, 15*time.Second, "the slow tool to start", started)
		cancel()
		if err := recvWithin(t, 15*time.Second, "the slow tool to end", ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("slow tool ended with %v, want context canceled", err)
		}
		recvWithin(t, 15*time.Second, "CallTool to return", done)
		e.waitSeries(t, `pallasgw_tool_calls_total{agent="x",caller="other",outcome="canceled",tool="send_message"}`, 2)
		if got := len(e.oai.ChatRequests()) - n; got != 1 {
			t.Errorf("model asked %d times after the cancel, want 1 (the run must stop)", got)
		}
		e.waitSeries(t, `pallasgw_inflight_requests{agent="x"}`, 0)
	})
	t.Run("agent timeout ends a hung model stream", func(t *testing.T) {
		hang := fakellm.Hang()
		e.oai.Script(hang)
		res := e.send(t, "impatient", map[string]any{"message": "hurry"})
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, "timeout") || !strings.Contains(text, "request id") {
			t.Fatalf("result (isError %v): %q", res.IsError, text)
		}
		recvWithin(t, 15*time.Second, "the model stream to be closed", hang.Disconnected())
		e.waitSeries(t, `pallasgw_tool_calls_total{agent="impatient",caller="other",outcome="timeout",tool="send_message"}`, 1)
	})
}

func TestLLMToolResultCut(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{extraTop: "limits: {max_tool_result_bytes: 64}\n"})
	long := strings.Repeat("0123456789", 20)
	e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-long", Name: "srv__echo", Args: callArgs(`{"text":"` + long + `"}`)}), fakellm.Text("cut"))
	if got := e.answer(t, "x", "long result"); got != "cut" {
		t.Fatalf("answer %q", got)
	}
	res, ok := findToolResult(e.oai.ChatRequests()[1], "c-long")
	want := ("echo: " + long)[:64] + "\n[truncated: 64 of 206 bytes shown]"
	if !ok || res.Text != want {
		t.Fatalf("tool result %q (found %v), want %q", res.Text, ok, want)
	}
}

// wantProgress is the progress of agent x making one call of srv/slow with
// two downstream progress notifications, then answering.
var wantProgress = []string{
	"x step 1 (llm)",
	"x step 1 (tool)",
	"srv/slow: started",
	"srv/slow: working 1/2",
	"srv/slow: working 2/2",
	"srv/slow: completed",
	"x step 2 (llm)",
	"x: done",
}

func TestLLMProgress(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	t.Run("go sdk", func(t *testing.T) {
		var log progressLog
		cs := e.session(t, "x", "", log.add)
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "p-1", Name: "srv__slow", Args: callArgs(`{"id":"sdk","steps":2}`)}), fakellm.Text("progress done"))
		done := make(chan *mcp.CallToolResult, 1)
		errc := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "report progress"},
				Meta: mcp.Meta{"progressToken": "sdk-tok"}})
			if err != nil {
				errc <- err
				return
			}
			done <- res
		}()
		// The downstream's progress is relayed while its tool still runs.
		eventually(t, 15*time.Second, "relayed downstream progress", func() bool { return log.has("srv/slow: working 2/2") })
		e.srv.release("sdk")
		select {
		case res := <-done:
			if res.IsError || resultText(res) != "progress done" {
				t.Fatalf("result %q", resultText(res))
			}
		case err := <-errc:
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatal("no result")
		}
		ps := log.sorted(t)
		var got []string
		for _, p := range ps {
			got = append(got, p.Message)
		}
		if strings.Join(got, "|") != strings.Join(wantProgress, "|") {
			t.Errorf("progress by counter\n got %q\nwant %q", got, wantProgress)
		}
		checkProgress(t, ps, "sdk-tok")
	})
	t.Run("raw sse in wire order", func(t *testing.T) {
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "p-2", Name: "srv__slow", Args: callArgs(`{"id":"raw","steps":2}`)}), fakellm.Text("progress done 2"))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s := e.rawCall(t, ctx, "x", map[string]any{"message": "report progress"}, "raw-tok")
		if s.resp.Header.Get("X-Accel-Buffering") != "no" {
			t.Errorf("X-Accel-Buffering = %q", s.resp.Header.Get("X-Accel-Buffering"))
		}
		var got []string
		var last float64
		var result *sseMsg
		for m := s.next(t); m != nil; m = s.next(t) {
			if result != nil {
				t.Fatalf("message after the result: %+v", m)
			}
			switch {
			case m.Method == "notifications/progress":
				p := m.Params
				if fmt.Sprint(p.ProgressToken) != "raw-tok" || p.Progress <= last {
					t.Errorf("progress %v (token %v) after %v", p.Progress, p.ProgressToken, last)
				}
				if (p.Total != nil) != (p.Message == "x: done") || (p.Total != nil && *p.Total != p.Progress) {
					t.Errorf("notification %q total %v", p.Message, p.Total)
				}
				last = p.Progress
				got = append(got, p.Message)
				if p.Message == "srv/slow: working 2/2" {
					e.srv.release("raw")
				}
			case m.Result != nil:
				result = m
			}
		}
		if strings.Join(got, "|") != strings.Join(wantProgress, "|") {
			t.Errorf("progress in wire order\n got %q\nwant %q", got, wantProgress)
		}
		if result == nil || result.Result.IsError || len(result.Result.Content) != 1 || result.Result.Content[0].Text != "progress done 2" {
			t.Fatalf("result %+v", result)
		}
	})
	t.Run("downstream progress without message", func(t *testing.T) {
		var log progressLog
		cs := e.session(t, "x", "", log.add)
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "p-3", Name: "srv__slow", Args: callArgs(`{"id":"quiet","steps":2,"quiet":true}`)}), fakellm.Text("quiet done"))
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "quietly"},
				Meta: mcp.Meta{"progressToken": "quiet-tok"}})
			done <- err
		}()
		eventually(t, 15*time.Second, "relayed downstream progress", func() bool { return log.has("srv/slow: progress 2/2") })
		e.srv.release("quiet")
		if err := recvWithin(t, 30*time.Second, "the result", done); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range log.sorted(t) {
			got = append(got, p.Message)
		}
		want := strings.Join(wantProgress, "|")
		want = strings.NewReplacer("working 1/2", "progress 1/2", "working 2/2", "progress 2/2").Replace(want)
		if strings.Join(got, "|") != want {
			t.Errorf("progress by counter\n got %q\nwant %q", got, strings.Split(want, "|"))
		}
	})
	e.waitSeries(t, `pallasgw_progress_notifications_total{outcome="dropped"}`, 0)
}

func TestLLMHealth(t *testing.T) {
	closed := freePorts(t, 1)[0]
	e := startLLM(t, `  fine:
    model: anthropic.fake-model
    servers: [srv]
  shaky:
    model: anthropic.fake-model
    servers: [srv, down]
  broken:
    model: openai.fake-model
    servers: [srv]
  lead:
    model: anthropic.fake-model
    agents: [shaky]
`, llmOpts{
		openaiKey: "sk-wrong-key-123",
		extraMCP:  fmt.Sprintf("    down: {url: \"http://127.0.0.1:%d/mcp\"}\n", closed),
		before:    func(e *llmEnv) { e.oai.RequireKey("sk-right-key-456") },
	})
	// Preflight runs in the background after start; health caches for 10 s,
	// so wait for its verdicts before the first get_health.
	e.waitSeries(t, `pallasgw_llm_provider_up{provider="openai"}`, 0)
	e.waitSeries(t, `pallasgw_llm_provider_up{provider="anthropic"}`, 1)
	cases := []struct {
		agent, status string
		msg           []string
		gauge         float64
	}{
		{"fine", "ok", nil, 1},
		{"shaky", "degraded", []string{"down", "unreachable"}, 0.5},
		{"broken", "error", []string{"openai", "API key"}, 0},
		{"lead", "degraded", []string{"agent shaky", "degraded"}, 0.5},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			cs := e.session(t, c.agent, "", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_health", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var h struct {
				Status, Timestamp, Message string
			}
			if err := json.Unmarshal([]byte(textOf(t, res)), &h); err != nil {
				t.Fatalf("health %q: %v", textOf(t, res), err)
			}
			if h.Status != c.status {
				t.Fatalf("status %q (%s), want %q", h.Status, h.Message, c.status)
			}
			if _, err := time.Parse(time.RFC3339, h.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", h.Timestamp, err)
			}
			for _, w := range c.msg {
				if !strings.Contains(h.Message, w) {
					t.Errorf("message %q lacks %q", h.Message, w)
				}
			}
			e.waitSeries(t, fmt.Sprintf(`pallasgw_agent_health{agent=%q}`, c.agent), c.gauge)
		})
	}
	if n := len(e.oai.ChatRequests()) + len(e.ant.ChatRequests()); n != 0 {
		t.Errorf("get_health called the model %d times", n)
	}
	logs := e.allLogs()
	for _, secret := range []string{"sk-wrong-key-123", "sk-ant-test"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the API key %q appears in the logs", secret)
		}
	}
}

func TestLLMMetrics(t *testing.T) {
	e := startLLM(t, `  m:
    servers: [srv]
`, llmOpts{prices: true})
	e.oai.Script(
		fakellm.ToolCalls(fakellm.Call{ID: "m-1", Name: "srv__echo", Args: callArgs(`{"text":"count"}`)}).Usage(10, 4),
		fakellm.Text("metered").Usage(20, 6),
	)
	if got := e.answer(t, "m", "measure me"); got != "metered" {
		t.Fatalf("answer %q", got)
	}
	exact := map[string]float64{
		`pallasgw_llm_requests_total{agent="m",model="fake-model",outcome="ok",provider="openai"}`:                                   2,
		`gen_ai_client_operation_duration_seconds_count{gen_ai_provider_name="openai",gen_ai_request_model="fake-model"}`:            2,
		`gen_ai_client_token_usage_count{gen_ai_provider_name="openai",gen_ai_request_model="fake-model",gen_ai_token_type="input"}`: 2,
		`gen_ai_client_token_usage_sum{gen_ai_provider_name="openai",gen_ai_request_model="fake-model",gen_ai_token_type="input"}`:   30,
		`gen_ai_client_token_usage_sum{gen_ai_provider_name="openai",gen_ai_request_model="fake-model",gen_ai_token_type="output"}`:  10,
		`pallasgw_llm_tokens_total{agent="m",model="openai.fake-model",type="input"}`:                                                30,
		`pallasgw_llm_tokens_total{agent="m",model="openai.fake-model",type="output"}`:                                               10,
		`pallasgw_agent_iterations_count`:                                                      1,
		`pallasgw_agent_iterations_sum`:                                                        2,
		`pallasgw_downstream_calls_total{outcome="ok",server="srv"}`:                           1,
		`pallasgw_tool_calls_total{agent="m",caller="other",outcome="ok",tool="send_message"}`: 1,
	}
	for series, want := range exact {
		if got, ok := e.metric(t, series); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	wantCost := (30*2.5 + 10*10) / 1e6
	if got, ok := e.metric(t, `pallasgw_llm_cost_usd_total{agent="m",model="openai.fake-model"}`); !ok || math.Abs(got-wantCost) > 1e-12 {
		t.Errorf("cost = %v (present %v), want %v", got, ok, wantCost)
	}
	e.waitSeries(t, `pallasgw_llm_provider_up{provider="openai"}`, 1)
	e.waitSeries(t, `pallasgw_llm_provider_up{provider="anthropic"}`, 1)
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
