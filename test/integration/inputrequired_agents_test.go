package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// Input-required rounds through agents (MCP 2026-07-28): an llm agent whose
// model calls a downstream tool that elicits (relayDown's "ask"), and a
// toolbox's execute_tool of that tool.

// startAgentsInputGateway starts a gateway with an llm agent "asker" (its
// model the fake llm) and a toolbox "tb", both on relayDown as "down".
func startAgentsInputGateway(t *testing.T, llmURL, downURL, timeout string) *gw {
	t.Helper()
	return startAgentsInputGatewayWith(t, llmURL, downURL, timeout, "http://127.0.0.1:1/mcp")
}

// startAgentsInputGatewayWith also gives the llm agent the server "srv" at
// srvURL.
func startAgentsInputGatewayWith(t *testing.T, llmURL, downURL, timeout, srvURL string, env ...string) *gw {
	t.Helper()
	return startGateway(t, fmt.Sprintf(`
name: mrtr-agents
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-test", timeout: 60s}
mcp:
  servers:
    down: {url: %q, timeout: %s}
    srv: {url: %q, timeout: 30s}
agents:
  asker: {kind: llm, servers: [down, srv]}
  tb: {kind: toolbox, servers: [down]}
`, stateKeyB64, llmURL, downURL, timeout, srvURL), env...)
}

// sdkSession connects the Go SDK client (sessionless 2026-07-28 unless
// version says otherwise) to url; with elicit it declares elicitation and
// answers with it.
func sdkSession(t *testing.T, url, version string, elicit func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return elicit(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func acceptName(name string) func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
	}
}

// toolResults are the texts of the tool results the model was given in
// chat request i.
func toolResults(t *testing.T, f *fakellm.Server, i int) []string {
	t.Helper()
	reqs := f.ChatRequests()
	if len(reqs) <= i {
		t.Fatalf("%d chat requests, want more than %d", len(reqs), i)
	}
	var out []string
	for _, m := range reqs[i].Chat.Messages {
		if m.Role == "tool" {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestAgentInputRequiredRoundTrip: the model calls the downstream's eliciting
// tool; the Go SDK caller (2026-07-28, elicitation declared) is asked
// input_required, answers with its handler, and gets the model's final
// answer. The model is called twice in all: no turn runs again.
func TestAgentInputRequiredRoundTrip(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)}), fakellm.Text("hello, bo"))
	g := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	cs := sdkSession(t, g.Base+"/agents/asker/mcp", "", acceptName("bo"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := call(ctx, cs, "send_message", map[string]any{"message": "greet me"})
	if err != nil || got != "hello, bo" {
		t.Fatalf("send_message: %q, %v\n%s", got, err, g.Logs())
	}
	if n := len(f.ChatRequests()); n != 2 {
		t.Errorf("%d model turns, want 2", n)
	}
	if res := toolResults(t, f, 1); len(res) != 1 || res[0] != "accept bo" {
		t.Errorf("the model got tool results %q, want the elicited answer", res)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="asked"}`); v != 1 {
		t.Errorf("asked rounds: %v, want 1", v)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="resumed"}`); v != 1 {
		t.Errorf("resumed rounds: %v, want 1", v)
	}
}

// agentCall POSTs one raw 2026-07-28 tools/call (caps: the declared client
// capabilities) and returns the HTTP status and the JSON-RPC answer.
func agentCall(t *testing.T, url, tool string, id int, args, caps, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return agentCallBearer(t, url, "", tool, id, args, caps, extra)
}

// agentCallBearer is agentCall with bearer's Authorization ("" for none).
func agentCallBearer(t *testing.T, url, bearer, tool string, id int, args, caps, extra map[string]any) (int, map[string]any) {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "_meta": modernMeta(caps)}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return postRPC(t, req)
}

// postRPC sends req (a POST of one JSON-RPC request) within 20 s and
// returns the HTTP status and the JSON-RPC answer: the body, or an SSE
// stream's last data line.
func postRPC(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// the last data line is the answer
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data: "); ok {
				raw = []byte(d)
				break
			}
		}
	}
	var msg map[string]any
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("%s %s: answer %d %q: %v", req.Method, req.URL.Path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, msg
}

var elicitCaps = map[string]any{"elicitation": map[string]any{}}

// TestAgentInputRequiredOtherReplica: the retry lands on a second gateway
// that shares state_key and never saw the call. It continues from the
// conversation the requestState carries: the downstream tool is called
// again, its elicitation answered from inputResponses, and the model is
// asked once more, with the whole conversation; the first turn is not run
// again.
func TestAgentInputRequiredOtherReplica(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)}), fakellm.Text("hello, cy"))
	a := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	b := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	args := map[string]any{"message": "greet me"}
	status, msg := agentCall(t, a.Base+"/agents/asker/mcp", "send_message", 1, args, elicitCaps, nil)
	key, state := inputRequired(t, msg)
	if status != http.StatusOK || key != "tool1-elicitation-1" {
		t.Fatalf("first round: HTTP %d, key %q", status, key)
	}
	_, msg = agentCall(t, b.Base+"/agents/asker/mcp", "send_message", 2, args, elicitCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "cy"}}}})
	if got := answerText(t, msg); !strings.Contains(got, "hello, cy") {
		t.Fatalf("continued call answered %s\n%s", got, b.Logs())
	}
	reqs := f.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d model turns, want 2 (the first one is not run again)", len(reqs))
	}
	last := reqs[1].Chat.Messages
	var roles []string
	for _, m := range last {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "system user assistant tool" && strings.Join(roles, " ") != "user assistant tool" {
		t.Errorf("the second turn's conversation: %v", roles)
	}
	if res := toolResults(t, f, 1); len(res) != 1 || res[0] != "accept cy" {
		t.Errorf("the model got tool results %q, want the answer from inputResponses", res)
	}
	if v, _ := b.metric(t, `pallasgw_input_required_total{outcome="replayed"}`); v != 1 {
		t.Errorf("continued rounds on the second replica: %v", v)
	}
	// Other arguments with that state are refused.
	status, msg = agentCall(t, b.Base+"/agents/asker/mcp", "send_message", 3, map[string]any{"message": "other"}, elicitCaps,
		map[string]any{"requestState": state, "inputResponses": map[string]any{key: map[string]any{"action": "decline"}}})
	if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) {
		t.Errorf("state for other arguments: HTTP %d %v", status, msg)
	}
}

// TestAgentInputRequiredTamperedState: an altered requestState, or one
// sealed under another key, is refused (-32602, HTTP 400) and counted; the
// model is not called for it.
func TestAgentInputRequiredTamperedState(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)}), fakellm.Text("hello, x"))
	g := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	url := g.Base + "/agents/asker/mcp"
	args := map[string]any{"message": "greet me"}
	_, msg := agentCall(t, url, "send_message", 1, args, elicitCaps, nil)
	key, state := inputRequired(t, msg)
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}
	for name, st := range map[string]string{"altered": state[:len(state)-2] + "AA", "appended": state + "-TAMPERED", "truncated": state[:40]} {
		status, msg := agentCall(t, url, "send_message", 2, args, elicitCaps, map[string]any{"requestState": st, "inputResponses": answer})
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "requestState") {
			t.Errorf("%s: HTTP %d %v, want 400 and -32602 naming the requestState", name, status, msg)
		}
	}
	if v, _ := g.metric(t, `pallasgw_request_state_rejections_total{reason="invalid"}`); v != 3 {
		t.Errorf("rejections counted: %v, want 3", v)
	}
	if n := len(f.ChatRequests()); n != 1 {
		t.Errorf("%d model turns, want 1", n)
	}
	_, msg = agentCall(t, url, "send_message", 3, args, elicitCaps, map[string]any{"requestState": state, "inputResponses": answer})
	if got := answerText(t, msg); !strings.Contains(got, "hello, x") {
		t.Errorf("untouched state: %s", got)
	}
}

// TestAgentInputRequiredNoCapability: a 2026-07-28 caller that did not
// declare elicitation gets -32021 (HTTP 400) as soon as the downstream
// asks, from the llm agent and from the toolbox alike; the model is not
// called again and nothing waits for the downstream's timeout (an hour).
func TestAgentInputRequiredNoCapability(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	ask := fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)})
	f.Script(ask, ask, fakellm.Text("never"))
	g := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "1h")
	for _, c := range []struct {
		agent, tool string
		args        map[string]any
	}{
		{"asker", "send_message", map[string]any{"message": "greet me"}},
		{"tb", "execute_tool", map[string]any{"server": "down", "tool": "ask"}},
	} {
		// The Go SDK client declares no elicitation without a handler.
		cs := sdkSession(t, g.Base+"/agents/"+c.agent+"/mcp", "", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		cancel()
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != -32021 {
			t.Errorf("%s: %v, want JSON-RPC error -32021", c.agent, err)
		}
		status, msg := agentCall(t, g.Base+"/agents/"+c.agent+"/mcp", c.tool, 2, c.args, map[string]any{}, nil)
		if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32021) {
			t.Errorf("%s raw: HTTP %d %v, want 400 and -32021", c.agent, status, msg)
		}
	}
	if n := len(f.ChatRequests()); n != 2 {
		t.Errorf("%d model turns, want 2 (one per send_message, none after the refusal)", n)
	}
	eventually(t, 10*time.Second, "no call to stay parked", func() bool {
		v, _ := g.metric(t, "pallasgw_input_required_parked")
		return v == 0
	})
}

// TestToolboxInputRequired: execute_tool of the eliciting tool asks a
// 2026-07-28 caller input_required and finishes with the downstream's
// result; a retry on another replica replays the downstream call.
func TestToolboxInputRequired(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	a := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	b := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	cs := sdkSession(t, a.Base+"/agents/tb/mcp", "", acceptName("bo"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := call(ctx, cs, "execute_tool", map[string]any{"server": "down", "tool": "ask"}); err != nil || got != "accept bo" {
		t.Fatalf("execute_tool: %q, %v", got, err)
	}
	args := map[string]any{"server": "down", "tool": "ask"}
	_, msg := agentCall(t, a.Base+"/agents/tb/mcp", "execute_tool", 1, args, elicitCaps, nil)
	key, state := inputRequired(t, msg)
	_, msg = agentCall(t, b.Base+"/agents/tb/mcp", "execute_tool", 2, args, elicitCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "cy"}}}})
	if got := answerText(t, msg); !strings.Contains(got, "accept cy") {
		t.Errorf("replayed execute_tool answered %s", got)
	}
	status, msg := agentCall(t, b.Base+"/agents/tb/mcp", "execute_tool", 3, args, elicitCaps, map[string]any{"requestState": state + "x",
		"inputResponses": map[string]any{key: map[string]any{"action": "decline"}}})
	if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) {
		t.Errorf("tampered state: HTTP %d %v", status, msg)
	}
}

// TestAgentElicitationSessionCaller: a session-based (2025-11-25) caller
// that declared elicitation gets the downstream's request relayed on the
// response stream of its send_message and execute_tool, and the answer
// reaches the downstream; with the fast path and through mcp-go
// (PALLASGW_WIRE_FAST=off), with and without progress.
func TestAgentElicitationSessionCaller(t *testing.T) {
	for _, env := range []string{"PALLASGW_WIRE_FAST=on", "PALLASGW_WIRE_FAST=off"} {
		t.Run(env, func(t *testing.T) {
			d := newRelayDown(t)
			f := fakellm.New(t)
			ask := fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)})
			f.Script(ask, fakellm.Text("hello, di"), ask, fakellm.Text("hello again"))
			g := startAgentsInputGatewayWith(t, f.OpenAIBaseURL(), d.ts.URL, "30s", "http://127.0.0.1:1/mcp", env)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs := sdkSession(t, g.Base+"/agents/asker/mcp", "2025-11-25", acceptName("di"))
			if got, err := call(ctx, cs, "send_message", map[string]any{"message": "greet me"}); err != nil || got != "hello, di" {
				t.Fatalf("send_message: %q, %v", got, err)
			}
			if res := toolResults(t, f, 1); len(res) != 1 || res[0] != "accept di" {
				t.Errorf("the model got tool results %q, want the relayed answer", res)
			}
			// With a progress token: the request goes between the progress
			// notifications on the same stream.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "again"},
				Meta: mcp.Meta{"progressToken": "p1"}})
			if err != nil || resultText(res) != "hello again" {
				t.Fatalf("send_message with progress: %v, %v", res, err)
			}
			if res := toolResults(t, f, 3); len(res) != 1 || res[0] != "accept di" {
				t.Errorf("with progress, the model got tool results %q", res)
			}
			tb := sdkSession(t, g.Base+"/agents/tb/mcp", "2025-11-25", acceptName("di"))
			if got, err := call(ctx, tb, "execute_tool", map[string]any{"server": "down", "tool": "ask"}); err != nil || got != "accept di" {
				t.Errorf("execute_tool: %q, %v", got, err)
			}
		})
	}
}

// TestAgentInputRequiredNeverRetried: a caller that never retries leaves
// the llm agent's downstream call waiting until the downstream's timeout;
// then the run stops (the model is not asked again), the parked call
// leaves the table and the gateway's goroutines go back down.
func TestAgentInputRequiredNeverRetried(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	call := fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)})
	f.Script(call, fakellm.Text("warm"))
	g := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "3s")
	url := g.Base + "/agents/asker/mcp"
	args := map[string]any{"message": "greet me"}
	_, msg := agentCall(t, url, "send_message", 1, args, elicitCaps, nil) // warm: sessions, pools
	_, state := inputRequired(t, msg)
	_, msg = agentCall(t, url, "send_message", 2, args, elicitCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"tool1-elicitation-1": map[string]any{"action": "decline"}}})
	answerText(t, msg)
	eventually(t, 10*time.Second, "the warm-up call to leave the table", func() bool {
		v, _ := g.metric(t, "pallasgw_input_required_parked")
		return v == 0
	})
	base, _ := g.metric(t, "go_goroutines")
	f.Script(call, call, call)
	for i := range 3 {
		_, msg := agentCall(t, url, "send_message", 10+i, args, elicitCaps, nil)
		inputRequired(t, msg)
	}
	if v, _ := g.metric(t, "pallasgw_input_required_parked"); v != 3 {
		t.Errorf("parked calls: %v, want 3", v)
	}
	eventually(t, 20*time.Second, "the parked calls to end", func() bool {
		v, _ := g.metric(t, "pallasgw_input_required_parked")
		return v == 0
	})
	eventually(t, 10*time.Second, "the gateway's goroutines to go back down", func() bool {
		v, _ := g.metric(t, "go_goroutines")
		return v <= base+2
	})
	if n := len(f.ChatRequests()); n != 5 {
		t.Errorf("%d model turns, want 5 (2 warm-up, 1 per abandoned call)", n)
	}
}

// TestAgentInputRequiredParallelTools: the model asks for two tool calls at
// once; one finishes, the other elicits. The retry on another replica runs
// only the one that asked (its key names it: tool2-…) and gives the model
// both results; the finished call is not made again.
func TestAgentInputRequiredParallelTools(t *testing.T) {
	d := newRelayDown(t)
	srv := newToolServer(t)
	f := fakellm.New(t)
	f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "srv__echo", Args: json.RawMessage(`{"text":"one"}`)},
		fakellm.Call{ID: "c2", Name: "down__ask", Args: json.RawMessage(`{}`)}), fakellm.Text("both done"))
	a := startAgentsInputGatewayWith(t, f.OpenAIBaseURL(), d.ts.URL, "30s", srv.url())
	b := startAgentsInputGatewayWith(t, f.OpenAIBaseURL(), d.ts.URL, "30s", srv.url())
	args := map[string]any{"message": "do both"}
	_, msg := agentCall(t, a.Base+"/agents/asker/mcp", "send_message", 1, args, elicitCaps, nil)
	key, state := inputRequired(t, msg)
	if key != "tool2-elicitation-1" {
		t.Fatalf("key %q, want tool2-elicitation-1", key)
	}
	// The echo call may still have been running when the caller was
	// asked. Once it has finished, a retry on the same replica that answers
	// nothing gets the question again, under a state sealed now.
	eventually(t, 10*time.Second, "the echo call", func() bool { return len(srv.called()) == 1 })
	_, msg = agentCall(t, a.Base+"/agents/asker/mcp", "send_message", 2, args, elicitCaps,
		map[string]any{"requestState": state, "inputResponses": map[string]any{}})
	if key, state = inputRequired(t, msg); key != "tool2-elicitation-1" {
		t.Fatalf("second round: key %q", key)
	}
	_, msg = agentCall(t, b.Base+"/agents/asker/mcp", "send_message", 3, args, elicitCaps, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"tool2-elicitation-1": map[string]any{"action": "accept", "content": map[string]any{"name": "ed"}}}})
	if got := answerText(t, msg); !strings.Contains(got, "both done") {
		t.Fatalf("continued call answered %s\n%s", got, b.Logs())
	}
	if n := len(srv.called()); n != 1 {
		t.Errorf("echo called %d times, want once (not again on the other replica)", n)
	}
	if n := len(f.ChatRequests()); n != 2 {
		t.Errorf("%d model turns, want 2", n)
	}
	res := toolResults(t, f, 1)
	if len(res) != 2 || res[0] != "echo: one" || res[1] != "accept ed" {
		t.Errorf("the model got tool results %q", res)
	}
}

// TestAgentInputRequiredSamplingRoots: sampling and roots requests of the
// downstream reach a 2026-07-28 caller of an llm agent the same way, in
// turn; each answer reaches the downstream and the model.
func TestAgentInputRequiredSamplingRoots(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	f.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__sample", Args: json.RawMessage(`{"tag":"a"}`)}),
		fakellm.ToolCalls(fakellm.Call{ID: "c2", Name: "down__roots", Args: json.RawMessage(`{}`)}), fakellm.Text("sampled and rooted"))
	g := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			tc, _ := r.Params.Messages[0].Content.(*mcp.TextContent)
			if tc == nil {
				return nil, fmt.Errorf("content %T", r.Params.Messages[0].Content)
			}
			return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "sampled " + tc.Text}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.Base + "/agents/asker/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, err := call(ctx, cs, "send_message", map[string]any{"message": "go"}); err != nil || got != "sampled and rooted" {
		t.Fatalf("send_message: %q, %v\n%s", got, err, g.Logs())
	}
	if res := toolResults(t, f, 1); len(res) != 1 || res[0] != "sampled hi a by m1" {
		t.Errorf("sampling: the model got %q", res)
	}
	if res := toolResults(t, f, 2); len(res) != 2 || res[1] != "file:///work" {
		t.Errorf("roots: the model got %q", res)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="asked"}`); v != 2 {
		t.Errorf("asked rounds: %v, want 2", v)
	}
}

// TestAgentInputRequiredLargeConversation: a conversation past the 1 MiB a
// requestState carries is left out of it; the replica that holds the run
// still finishes it, and another replica refuses the state (-32602,
// reason "lost") instead of running the model turns again.
func TestAgentInputRequiredLargeConversation(t *testing.T) {
	d := newRelayDown(t)
	f := fakellm.New(t)
	ask := fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__ask", Args: json.RawMessage(`{}`)})
	f.Script(ask, fakellm.Text("big done"))
	a := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	b := startAgentsInputGateway(t, f.OpenAIBaseURL(), d.ts.URL, "30s")
	args := map[string]any{"message": strings.Repeat("long message ", 90_000)} // 1.1 MiB
	_, msg := agentCall(t, a.Base+"/agents/asker/mcp", "send_message", 1, args, elicitCaps, nil)
	key, state := inputRequired(t, msg)
	if len(state) > 64<<10 {
		t.Errorf("requestState is %d bytes; the conversation should have been left out", len(state))
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}
	status, msg := agentCall(t, b.Base+"/agents/asker/mcp", "send_message", 2, args, elicitCaps,
		map[string]any{"requestState": state, "inputResponses": answer})
	if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) ||
		!strings.Contains(fmt.Sprint(e["message"]), "can no longer be served") {
		t.Errorf("other replica: HTTP %d %v", status, msg)
	}
	if v, _ := b.metric(t, `pallasgw_request_state_rejections_total{reason="lost"}`); v != 1 {
		t.Errorf("lost states counted: %v", v)
	}
	_, msg = agentCall(t, a.Base+"/agents/asker/mcp", "send_message", 3, args, elicitCaps,
		map[string]any{"requestState": state, "inputResponses": answer})
	if got := answerText(t, msg); !strings.Contains(got, "big done") {
		t.Errorf("the replica holding the run answered %s", got)
	}
	if n := len(f.ChatRequests()); n != 2 {
		t.Errorf("%d model turns, want 2", n)
	}
}
