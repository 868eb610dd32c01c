package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callAs POSTs one raw 2026-07-28 tools/call of tool (no arguments,
// elicitation declared) with who's bearer token.
func callAs(t *testing.T, url, who, tool string, id int, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return callBearer(t, url, who+"-token-0123456789abcdef", tool, id, extra)
}

// callBearer is callAs with the bearer token given.
func callBearer(t *testing.T, url, bearer, tool string, id int, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return agentCallBearer(t, url, bearer, tool, id, map[string]any{}, elicitCaps, extra)
}

// A requestState is no bearer token: another caller (here one denied the
// tool) cannot finish the call with it, on the replica that holds the call
// or elsewhere; the caller it was issued to can.
func TestInputRequiredStateBoundToCaller(t *testing.T) {
	d := newRelayDown(t)
	cfg := fmt.Sprintf(`
name: mrtr
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
policy:
  callers:
    ops: {tools: {deny: ["down__ask"]}}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, d.ts.URL)
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	_, msg := callAs(t, a.Base+"/agents/px/mcp", "web", "ask", 1, nil)
	key, state := inputRequired(t, msg)
	retry := func(who string, id int) map[string]any {
		return map[string]any{"requestState": state,
			"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": who}}}}
	}
	for _, g := range []*gw{a, b} {
		status, msg := callAs(t, g.Base+"/agents/px/mcp", "ops", "ask", 2, retry("mallory", 2))
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "another caller") {
			t.Errorf("another caller's retry: HTTP %d %v, want 400 and -32602 naming the caller", status, msg)
		}
		if v, _ := g.metric(t, `pallasgw_request_state_rejections_total{reason="mismatch"}`); v != 1 {
			t.Errorf("mismatches counted: %v, want 1", v)
		}
	}
	_, msg = callAs(t, a.Base+"/agents/px/mcp", "web", "ask", 3, retry("web", 3))
	if got := answerText(t, msg); !strings.Contains(got, "accept web") {
		t.Errorf("the caller's own retry answered %s", got)
	}
}

// newRoundsDown is a Go SDK downstream (session-based for the gateway)
// whose tool "rounds" asks two questions in two rounds of its own
// (InputRequests with an evolving requestState, as the conformance
// fixture's multi-round tool does): the SDK sends the first as an
// elicitation/create on the call's stream and answers the second round
// natively, as an input-required result without a resultType.
func newRoundsDown(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "rounds", Version: "1"}, nil)
	schema := func(prop string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, prop, prop))
	}
	accepted := func(r mcp.InputResponseMap, key, prop string) string {
		if e, ok := r[key].(*mcp.ElicitResult); ok && e != nil && e.Action == "accept" {
			if v, ok := e.Content[prop].(string); ok {
				return v
			}
		}
		return "unknown"
	}
	s.AddTool(&mcp.Tool{Name: "rounds", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			switch state := req.Params.RequestState; {
			case state == "":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step1": &mcp.ElicitParams{Message: "Your name?",
					RequestedSchema: schema("name")}}, RequestState: "round=1"}, nil
			case state == "round=1":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"step2": &mcp.ElicitParams{Message: "Your color?",
					RequestedSchema: schema("color")}}, RequestState: "round=2;name=" + accepted(req.Params.InputResponses, "step1", "name")}, nil
			default:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimPrefix(state, "round=2;name=") +
					" likes " + accepted(req.Params.InputResponses, "step2", "color")}}}, nil
			}
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A downstream's own second round reaches a 2026-07-28 caller as an
// input-required result whichever replica the caller's retry lands on: the
// replica holding the parked call passes it through, another replays the
// call and must do the same, not send the downstream's bytes as a complete
// result (which it did when the downstream left out resultType). The third
// round finishes on a third replica.
func TestInputRequiredDownstreamRoundsAcrossReplicas(t *testing.T) {
	down := newRoundsDown(t)
	cfg := fmt.Sprintf(`
name: rounds
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, down)
	a, b, c := startGateway(t, cfg), startGateway(t, cfg), startGateway(t, cfg)
	for _, route := range []struct {
		name     string
		replicas []*gw
	}{{"one replica", []*gw{a, a, a}}, {"three replicas", []*gw{a, b, c}}} {
		t.Run(route.name, func(t *testing.T) {
			url := func(i int) string { return route.replicas[i].Base + "/agents/px/mcp" }
			_, msg := callBearer(t, url(0), "", "rounds", 1, nil)
			key, state := inputRequired(t, msg)
			answer := func(k, st, prop, v string) map[string]any {
				return map[string]any{"requestState": st, "inputResponses": map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{prop: v}}}}
			}
			_, msg = callBearer(t, url(1), "", "rounds", 2, answer(key, state, "name", "ann"))
			key2, state2 := inputRequired(t, msg)
			if state2 == state {
				t.Errorf("round 2 came with round 1's requestState")
			}
			_, msg = callBearer(t, url(2), "", "rounds", 3, answer(key2, state2, "color", "red"))
			if got := answerText(t, msg); !strings.Contains(got, `"ann likes red"`) {
				t.Errorf("round 3: %s, want the text %q", got, "ann likes red")
			}
		})
	}
}
