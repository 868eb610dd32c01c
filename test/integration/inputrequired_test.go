package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The input-required bridge (MCP 2026-07-28): a proxy agent in front of a
// session-based Go SDK downstream that elicits (relayDown's "ask") answers
// a 2026-07-28 caller input_required and finishes the call on its retry.

// stateKeyB64 is a fixed state_key shared by the replicas of a test.
const stateKeyB64 = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func startInputGateway(t *testing.T, downURL, timeout string) *gw {
	t.Helper()
	return startGateway(t, fmt.Sprintf(`
name: mrtr
listen: "127.0.0.1:{{PORT}}"
state_key: %q
mcp:
  servers:
    down: {url: %q, timeout: %s}
agents:
  px: {kind: proxy, servers: [down]}
`, stateKeyB64, downURL, timeout))
}

// modernCall POSTs one 2026-07-28 tools/call of tool, without arguments,
// from a caller that declared elicitation, with params extra
// (inputResponses, requestState), and returns the HTTP status and the
// JSON-RPC answer (agentCall).
func modernCall(t *testing.T, url, tool string, id int, extra map[string]any) (int, map[string]any) {
	t.Helper()
	return agentCall(t, url, tool, id, map[string]any{}, elicitCaps, extra)
}

// inputRequired checks that msg is an input_required answer with one
// elicitation request, and returns its key and requestState.
func inputRequired(t *testing.T, msg map[string]any) (key, state string) {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	if res == nil || res["resultType"] != "input_required" {
		t.Fatalf("want an input_required result, got %v", msg)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("want one input request, got %v", res["inputRequests"])
	}
	for k, v := range reqs {
		if m, _ := v.(map[string]any); m["method"] != "elicitation/create" {
			t.Fatalf("input request %s: %v", k, v)
		}
		key = k
	}
	state, _ = res["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState: %v", res)
	}
	return key, state
}

func answerText(t *testing.T, msg map[string]any) string {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	if res == nil || res["resultType"] != "complete" {
		t.Fatalf("want a complete result, got %v", msg)
	}
	b, _ := json.Marshal(res["content"])
	return string(b)
}

// TestInputRequiredRoundTrip: the Go SDK client (sessionless 2026-07-28)
// answers the input_required round with its elicitation handler and gets
// the downstream's result.
func TestInputRequiredRoundTrip(t *testing.T) {
	d := newRelayDown(t)
	g := startInputGateway(t, d.ts.URL, "30s")
	cs := sdkSession(t, g.Base+"/agents/px/mcp", "", acceptName("bo"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := call(ctx, cs, "ask", nil); err != nil || got != "accept bo" {
		t.Fatalf("ask: %q, %v", got, err)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="asked"}`); v < 1 {
		t.Errorf("asked rounds: %v", v)
	}
}

// TestInputRequiredOtherReplica: the retry lands on a second gateway that
// shares state_key and never saw the call: it replays the call and answers
// the downstream's elicitation from the retry's inputResponses. The first
// gateway's call is left waiting and ends with the downstream's timeout.
func TestInputRequiredOtherReplica(t *testing.T) {
	d := newRelayDown(t)
	a := startInputGateway(t, d.ts.URL, "30s")
	b := startInputGateway(t, d.ts.URL, "30s")
	status, msg := modernCall(t, a.Base+"/agents/px/mcp", "ask", 1, nil)
	key, state := inputRequired(t, msg)
	if status != http.StatusOK || key != "elicitation-1" {
		t.Fatalf("first round: HTTP %d, key %q", status, key)
	}
	_, msg = modernCall(t, b.Base+"/agents/px/mcp", "ask", 2, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "cy"}}}})
	if got := answerText(t, msg); !strings.Contains(got, "accept cy") {
		t.Errorf("replayed call answered %s", got)
	}
	if msg["id"] != float64(2) {
		t.Errorf("answer id %v, want the retry's (2)", msg["id"])
	}
	if v, _ := b.metric(t, `pallasgw_input_required_total{outcome="replayed"}`); v != 1 {
		t.Errorf("replayed rounds on the second replica: %v", v)
	}
	// The same retry on the replica that asked finds the waiting call.
	_, msg = modernCall(t, a.Base+"/agents/px/mcp", "ask", 3, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "di"}}}})
	if got := answerText(t, msg); !strings.Contains(got, "accept di") {
		t.Errorf("resumed call answered %s", got)
	}
	if v, _ := a.metric(t, `pallasgw_input_required_total{outcome="resumed"}`); v != 1 {
		t.Errorf("resumed rounds on the first replica: %v", v)
	}
}

// TestInputRequiredTamperedState: a requestState that was changed, or
// sealed under another key, is refused with -32602 (HTTP 400) and counted.
func TestInputRequiredTamperedState(t *testing.T) {
	d := newRelayDown(t)
	g := startInputGateway(t, d.ts.URL, "30s")
	other := startGateway(t, fmt.Sprintf(`
name: other
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, d.ts.URL)) // a random key of its own
	url := g.Base + "/agents/px/mcp"
	_, msg := modernCall(t, url, "ask", 1, nil)
	key, state := inputRequired(t, msg)
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}
	for name, c := range map[string]struct {
		url, state string
	}{
		"altered":     {url, state[:len(state)-2] + "AA"},
		"appended":    {url, state + "-TAMPERED"},
		"foreign key": {other.Base + "/agents/px/mcp", state},
	} {
		status, msg := modernCall(t, c.url, "ask", 2, map[string]any{"requestState": c.state, "inputResponses": answer})
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "requestState") {
			t.Errorf("%s: HTTP %d %v, want 400 and -32602 naming the requestState", name, status, msg)
		}
	}
	if v, _ := g.metric(t, `pallasgw_request_state_rejections_total{reason="invalid"}`); v != 2 {
		t.Errorf("rejections counted: %v, want 2", v)
	}
	// The untouched state still finishes the call.
	_, msg = modernCall(t, url, "ask", 3, map[string]any{"requestState": state, "inputResponses": answer})
	if got := answerText(t, msg); !strings.Contains(got, "accept x") {
		t.Errorf("untouched state: %s", got)
	}
}

// TestInputRequiredNeverRetried: a caller that never retries leaves the
// downstream call waiting; it ends with the downstream's timeout, the
// parked call leaves the table and the gateway's goroutines go back down.
func TestInputRequiredNeverRetried(t *testing.T) {
	d := newRelayDown(t)
	g := startInputGateway(t, d.ts.URL, "3s")
	url := g.Base + "/agents/px/mcp"
	_, msg := modernCall(t, url, "ask", 1, nil) // warm: the session, the registry
	_, state := inputRequired(t, msg)
	_, msg = modernCall(t, url, "ask", 2, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"elicitation-1": map[string]any{"action": "decline"}}})
	answerText(t, msg)
	time.Sleep(500 * time.Millisecond)
	base, _ := g.metric(t, "go_goroutines")
	start := time.Now()
	for i := range 5 {
		_, msg := modernCall(t, url, "ask", 10+i, nil)
		inputRequired(t, msg)
	}
	if v, _ := g.metric(t, "pallasgw_input_required_parked"); v != 5 {
		t.Errorf("parked calls: %v, want 5", v)
	}
	eventually(t, 10*time.Second, "the parked calls to end", func() bool {
		v, _ := g.metric(t, "pallasgw_input_required_parked")
		return v == 0
	})
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the calls ended after %v, the downstream's timeout is 3s", took)
	}
	eventually(t, 10*time.Second, "the gateway's goroutines to go back down", func() bool {
		v, _ := g.metric(t, "go_goroutines")
		return v <= base+2
	})
}

// TestInputRequiredPromptAndResource: a downstream that elicits while it
// renders a prompt or reads a resource: the Go SDK client (2026-07-28) gets
// input_required for prompts/get and resources/read, answers it with its
// elicitation handler, and gets the downstream's result; a caller that did
// not declare elicitation gets -32021 (HTTP 400).
func TestInputRequiredPromptAndResource(t *testing.T) {
	t.Parallel() // its own gateway process and fakes; mostly waiting on timers
	d := newRelayDown(t)
	g := startInputGateway(t, d.ts.URL, "30s")
	cs := sdkSession(t, g.Base+"/agents/px/mcp", "", acceptName("bo"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "askprompt", Arguments: map[string]string{"tag": "t1"}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if tc, _ := pr.Messages[0].Content.(*mcp.TextContent); tc == nil || tc.Text != "accept bo t1" {
		t.Errorf("prompts/get answered %+v", pr.Messages[0].Content)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://name"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "accept bo" {
		t.Errorf("resources/read answered %+v", rr.Contents)
	}
	if v, _ := g.metric(t, `pallasgw_input_required_total{outcome="asked"}`); v < 2 {
		t.Errorf("asked rounds: %v, want 2", v)
	}

	// The raw round: its key, and the retry under a new id.
	url := g.Base + "/agents/px/mcp"
	post := func(id int, caps map[string]any, extra map[string]any) (int, map[string]any) {
		params := map[string]any{"name": "askprompt", "arguments": map[string]any{"tag": "t2"}, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "it", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": caps}}
		for k, v := range extra {
			params[k] = v
		}
		return modernRequest(t, url, "prompts/get", "askprompt", id, params)
	}
	status, msg := post(1, map[string]any{"elicitation": map[string]any{}}, nil)
	key, state := inputRequired(t, msg)
	if status != http.StatusOK || key != "elicitation-1" {
		t.Fatalf("first round: HTTP %d, key %q", status, key)
	}
	_, msg = post(2, map[string]any{"elicitation": map[string]any{}}, map[string]any{"requestState": state,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "cy"}}}})
	res, _ := msg["result"].(map[string]any)
	if b, _ := json.Marshal(res["messages"]); res["resultType"] != "complete" || msg["id"] != float64(2) || !strings.Contains(string(b), "accept cy t2") {
		t.Errorf("retry answered %v", msg)
	}
	status, msg = post(3, map[string]any{}, nil)
	if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32021) {
		t.Errorf("without elicitation: HTTP %d %v, want 400 and -32021", status, msg)
	}
	// A request mcp-go would refuse is left to it: an Mcp-Name that
	// contradicts the body gets its -32020.
	status, msg = modernRequest(t, url, "prompts/get", "other", 4, map[string]any{"name": "askprompt",
		"_meta": modernMeta(map[string]any{"elicitation": map[string]any{}})})
	if e, _ := msg["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32020) {
		t.Errorf("contradicting Mcp-Name: HTTP %d %v, want 400 and -32020", status, msg)
	}
}

// modernRequest POSTs one 2026-07-28 request (method, Mcp-Name name, id,
// params) and returns the HTTP status and the JSON-RPC answer.
func modernRequest(t *testing.T, url, method, name string, id int, params map[string]any, hdr ...string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("%s answer: %v", method, err)
	}
	return resp.StatusCode, msg
}

// modernMeta is the _meta of a 2026-07-28 request declaring caps.
func modernMeta(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "it", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
}

// TestCachingHints: list results carry ttlMs and cacheScope for 2026-07-28
// callers: a proxy's lists (built per caller, following its downstreams)
// and its resources/read (bridged) private and revalidated (ttlMs 0), an
// llm agent's lists private for 60 s; the other kinds' resource lists are
// empty, with the same hints.
func TestCachingHints(t *testing.T) {
	t.Parallel() // its own gateway process and fakes; mostly waiting on timers
	d := newRelayDown(t)
	g := startGateway(t, fmt.Sprintf(`
name: caching
listen: "127.0.0.1:{{PORT}}"
models:
  default: passthrough
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
  echo: {}
  seq: {kind: chain, sequence: [echo]}
  box: {kind: toolbox, servers: [down]}
`, d.ts.URL))
	// The kinds but proxy serve no resources: they declare the capability
	// and answer empty lists with the same hints as their other lists.
	for _, agent := range []string{"echo", "seq", "box"} {
		for _, c := range []struct{ method, key string }{{"resources/list", "resources"}, {"resources/templates/list", "resourceTemplates"}} {
			_, msg := modernRequest(t, g.Base+"/agents/"+agent+"/mcp", c.method, "", 1, map[string]any{"_meta": modernMeta(map[string]any{})})
			res, _ := msg["result"].(map[string]any)
			if list, ok := res[c.key].([]any); !ok || len(list) != 0 || res["ttlMs"] != float64(60000) || res["cacheScope"] != "private" {
				t.Errorf("%s %s: want an empty %s with ttlMs 60000, private: %v", agent, c.method, c.key, msg)
			}
		}
	}
	for _, c := range []struct {
		agent, method, name string
		params              map[string]any
		ttl                 float64
	}{
		{"px", "tools/list", "", nil, 0},
		{"px", "prompts/list", "", nil, 0},
		{"px", "resources/list", "", nil, 0},
		{"px", "resources/templates/list", "", nil, 0},
		{"px", "resources/read", "ask://name", map[string]any{"uri": "ask://name"}, 0},
		{"echo", "tools/list", "", nil, 60000},
		{"echo", "prompts/list", "", nil, 60000},
	} {
		params := map[string]any{"_meta": modernMeta(map[string]any{"elicitation": map[string]any{}})}
		for k, v := range c.params {
			params[k] = v
		}
		_, msg := modernRequest(t, g.Base+"/agents/"+c.agent+"/mcp", c.method, c.name, 1, params)
		res, _ := msg["result"].(map[string]any)
		if c.method == "resources/read" && res["resultType"] == "input_required" {
			continue // the downstream elicits; the hints of a complete read are checked below
		}
		if res == nil || res["ttlMs"] != c.ttl || res["cacheScope"] != "private" {
			t.Errorf("%s %s: ttlMs %v cacheScope %v, want %v private (%v)", c.agent, c.method, res["ttlMs"], res["cacheScope"], c.ttl, msg)
		}
	}
	// A bridged read, completed.
	url := g.Base + "/agents/px/mcp"
	params := map[string]any{"uri": "ask://name", "_meta": modernMeta(map[string]any{"elicitation": map[string]any{}})}
	_, msg := modernRequest(t, url, "resources/read", "ask://name", 1, params)
	key, state := inputRequired(t, msg)
	params["requestState"], params["inputResponses"] = state, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "x"}}}
	_, msg = modernRequest(t, url, "resources/read", "ask://name", 2, params)
	if res, _ := msg["result"].(map[string]any); res == nil || res["resultType"] != "complete" || res["ttlMs"] != float64(0) || res["cacheScope"] != "private" {
		t.Errorf("bridged resources/read: %v", msg)
	}
}

// TestDiscoverMergesDownstreams: server/discover is answered for every
// agent; a proxy's capabilities are its downstreams' merged view: prompts
// and resources only when a downstream of the caller declares them.
func TestDiscoverMergesDownstreams(t *testing.T) {
	d := newRelayDown(t)
	toolsOnly := mcp.NewServer(&mcp.Implementation{Name: "toolsonly", Version: "1"}, nil)
	toolsOnly.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return toolsOnly }, nil))
	t.Cleanup(ts.Close)
	g := startGateway(t, fmt.Sprintf(`
name: discover
listen: "127.0.0.1:{{PORT}}"
models:
  default: passthrough
mcp:
  servers:
    down: {url: %q, timeout: 30s}
    plain: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
  pt: {kind: proxy, servers: [plain]}
  echo: {}
`, d.ts.URL, ts.URL))
	for _, c := range []struct {
		agent string
		want  map[string]bool // capability → present
	}{
		{"px", map[string]bool{"tools": true, "prompts": true, "resources": true}},
		{"pt", map[string]bool{"tools": true, "prompts": false, "resources": false}},
		{"echo", map[string]bool{"tools": true, "resources": true}},
	} {
		status, msg := modernRequest(t, g.Base+"/agents/"+c.agent+"/mcp", "server/discover", "", 1,
			map[string]any{"_meta": modernMeta(map[string]any{})})
		res, _ := msg["result"].(map[string]any)
		caps, _ := res["capabilities"].(map[string]any)
		if status != http.StatusOK || caps == nil {
			t.Errorf("%s: HTTP %d %v", c.agent, status, msg)
			continue
		}
		for name, want := range c.want {
			if _, got := caps[name]; got != want {
				t.Errorf("%s: capability %s present %v, want %v (%v)", c.agent, name, got, want, caps)
			}
		}
	}
}

// TestParamHeaders: a proxied tool whose schema binds a parameter to an
// Mcp-Param-* header (x-mcp-header): a 2026-07-28 call whose header agrees
// with the body (plain or in the base64 form) goes through; one that
// contradicts it or leaves it out gets -32020 (HTTP 400) with the request
// id; an Mcp-Param-* header the tool does not declare is left alone.
func TestParamHeaders(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "regional", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "where", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "at " + string(req.Params.Arguments)}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	g := startGateway(t, fmt.Sprintf(`
name: headers
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    down: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down]}
`, ts.URL))
	url := g.Base + "/agents/px/mcp"
	params := map[string]any{"name": "where", "arguments": map[string]any{"region": "eu"}, "_meta": modernMeta(map[string]any{})}
	for i, c := range []struct {
		name string
		hdr  []string
		ok   bool
	}{
		{"plain", []string{"Mcp-Param-Region", "eu"}, true},
		{"base64", []string{"Mcp-Param-Region", "=?base64?ZXU=?="}, true},
		{"unknown header left alone", []string{"Mcp-Param-Region", "eu", "Mcp-Param-Other", "x"}, true},
		{"contradicts", []string{"Mcp-Param-Region", "us"}, false},
		{"missing", nil, false},
	} {
		status, msg := modernRequest(t, url, "tools/call", "where", 10+i, params, c.hdr...)
		res, _ := msg["result"].(map[string]any)
		e, _ := msg["error"].(map[string]any)
		switch {
		case c.ok && (status != http.StatusOK || res == nil || res["isError"] == true):
			t.Errorf("%s: HTTP %d %v, want the tool's result", c.name, status, msg)
		case !c.ok && (status != http.StatusBadRequest || e == nil || e["code"] != float64(-32020) || msg["id"] != float64(10+i)):
			t.Errorf("%s: HTTP %d %v, want 400 and -32020 with id %d", c.name, status, msg, 10+i)
		}
	}
}
