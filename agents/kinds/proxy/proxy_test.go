package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

func TestProxyOneServer(t *testing.T) {
	down := agenttest.OneServerDown()
	ta := agenttest.New(t, agenttest.ProxyOneServer, down)
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("protocol "+v, func(t *testing.T) {
			bob := ta.Session(t, "px", "bob", v, nil)
			if got, want := agenttest.ToolNames(t, bob), []string{"get_health", "read", "write"}; !reflect.DeepEqual(got, want) {
				t.Errorf("bob sees %v, want %v (admin_* denied by the agent's rules)", got, want)
			}
			alice := ta.Session(t, "px", "alice", v, nil)
			if got, want := agenttest.ToolNames(t, alice), []string{"get_health", "read"}; !reflect.DeepEqual(got, want) {
				t.Errorf("alice sees %v, want %v (write denied by her caller rule)", got, want)
			}
			res, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"path": "/a"}})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(map[string]any{"trace": res.Meta["trace"], "content": res.Content, "structured": res.StructuredContent, "isError": res.IsError})
			want := `{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","_meta":{"k":"v"}},{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}],"isError":true,"structured":{"n":3},"trace":"abc"}`
			if string(got) != want {
				t.Errorf("result changed on the way:\n got %s\nwant %s", got, want)
			}
			before := agenttest.CounterValue(ta.Metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied", "other"))
			res, err = alice.CallTool(context.Background(), &sdk.CallToolParams{Name: "write"})
			if err != nil || !res.IsError || !strings.Contains(agenttest.AllText(res), "denied by policy") {
				t.Fatalf("alice calling write: %v %+v", err, res)
			}
			if after := agenttest.CounterValue(ta.Metrics.PolicyDecisions.WithLabelValues("px", "deny", "tool_denied", "other")); after != before+1 {
				t.Errorf("policy decisions deny/tool_denied %v → %v, want one more", before, after)
			}
			if _, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"}); err == nil {
				t.Error("a tool no server has must be a JSON-RPC error")
			}
			if res, err := bob.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_health"}); err != nil || !strings.Contains(agenttest.AllText(res), `"status"`) {
				t.Errorf("get_health: %v %v", err, res)
			}
		})
	}
	for _, c := range down.CallLog() {
		if c == "files/admin_wipe" || c == "files/nope" {
			t.Errorf("downstream saw a call it must not: %s", c)
		}
	}
	sawTenant := false
	for _, h := range down.Headers() {
		sawTenant = sawTenant || h.Get("X-Tenant") == "t-bob"
	}
	if !sawTenant {
		t.Error("forward_headers did not reach the downstream")
	}
}

func TestProxyCallWithoutList(t *testing.T) {
	ta := agenttest.New(t, agenttest.ProxyOneServer, agenttest.OneServerDown())
	cs := ta.Session(t, "px", "bob", "", nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write"})
	if err != nil || agenttest.AllText(res) != "written" {
		t.Fatalf("call before any list: %v %v", err, res)
	}
}

func TestProxyTwoServers(t *testing.T) {
	down := agenttest.TwoServersDown()
	ta := agenttest.New(t, agenttest.ProxyTwoServers, down)
	cs := ta.Session(t, "px", "", "2025-11-25", nil)
	ctx := context.Background()
	if got, want := agenttest.ToolNames(t, cs), []string{"a__echo", "b__echo", "b__get_health", "get_health"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	for _, srv := range []string{"a", "b"} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: srv + "__echo"})
		if err != nil || agenttest.AllText(res) != "from "+srv {
			t.Errorf("%s__echo: %v %v", srv, err, res)
		}
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "a__greet" {
		t.Fatalf("prompts: %v %+v", err, prompts)
	}
	pr, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "a__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || pr.Description != "a/greet ann" {
		t.Fatalf("prompts/get: %v %+v", err, pr)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rl.Resources {
		got = append(got, r.Name+" "+r.URI)
	}
	if want := []string{"a__doc test://a/doc", "b__doc test://b/doc"}; !reflect.DeepEqual(got, want) {
		t.Errorf("resources %v, want %v (names prefixed, URIs unchanged)", got, want)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "test://items/{id}" {
		t.Fatalf("templates: %v %+v", err, tl)
	}
	for uri, want := range map[string]string{"test://a/doc": "from a", "test://b/doc": "from b", "test://items/7": "from b"} {
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != want {
			t.Errorf("read %s: %v %+v, want %q", uri, err, rr, want)
		}
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://nowhere"}); err == nil {
		t.Error("a URI no server lists must fail")
	}
}

func TestProxyProgressRelay(t *testing.T) {
	down := agenttest.OneServerDown()
	down.Call = func(ctx context.Context, _, _ string, _ map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		if onProgress == nil {
			return mcpgo.NewToolResultText("no token asked"), nil
		}
		ten := 10.0
		onProgress(1, &ten, "one")
		onProgress(1, &ten, "again")
		onProgress(0.5, nil, "")
		onProgress(10, &ten, "done")
		return mcpgo.NewToolResultText("finished"), nil
	}
	ta := agenttest.New(t, agenttest.ProxyOneServer, down)
	for _, modern := range []bool{false, true} {
		t.Run(fmt.Sprintf("modern=%v", modern), func(t *testing.T) {
			msgs := ta.RawCall(t, "px", "read", map[string]any{"progressToken": "tok-9"}, modern)
			if len(msgs) != 5 || msgs[4]["result"] == nil {
				t.Fatalf("want 4 notifications then the result, got %v", msgs)
			}
			last := 0.0
			for i, m := range msgs[:4] {
				p, _ := m["params"].(map[string]any)
				if m["method"] != "notifications/progress" || p["progressToken"] != "tok-9" {
					t.Fatalf("#%d: %v", i, m)
				}
				prog := p["progress"].(float64)
				if i > 0 && !(prog > last) {
					t.Errorf("#%d progress %v not above %v", i, prog, last)
				}
				last = prog
			}
			p := func(i int, k string) any { return msgs[i]["params"].(map[string]any)[k] }
			if p(0, "progress") != 1.0 || p(0, "total") != 10.0 || p(0, "message") != "one" || p(1, "message") != "again" ||
				p(2, "total") != nil || p(3, "progress") != 10.0 || p(3, "message") != "done" {
				t.Errorf("values changed on the way: %v", msgs[:4])
			}
			msgs = ta.RawCall(t, "px", "read", nil, modern)
			if len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0]["result"]), "no token asked") {
				t.Errorf("without a token the downstream must not be asked for progress: %v", msgs)
			}
		})
	}
}

func TestProxyDownstreamFailures(t *testing.T) {
	down := agenttest.TwoServersDown()
	down.ListErr = map[string]error{"b": fmt.Errorf("downstream %q: %w", "b", mcpclient.ErrUnavailable)}
	down.Call = func(ctx context.Context, server, _ string, _ map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		return nil, fmt.Errorf("downstream %q: tools/call: %w", server, mcpclient.ErrUnavailable)
	}
	ta := agenttest.New(t, agenttest.ProxyTwoServers, down)
	cs := ta.Session(t, "px", "", "", nil)
	if got, want := agenttest.ToolNames(t, cs), []string{"a__echo", "get_health"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "a__echo"})
	if err != nil || !res.IsError || !strings.Contains(agenttest.AllText(res), "unavailable") || !strings.Contains(agenttest.AllText(res), "rid-1") {
		t.Errorf("unreachable downstream: %v %+v", err, res)
	}
}

func TestProxyProgressBurst(t *testing.T) {
	const n = 350
	down := agenttest.OneServerDown()
	down.Call = func(ctx context.Context, _, _ string, _ map[string]any, onProgress mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		for i := 1; i <= n; i++ {
			onProgress(float64(i), nil, fmt.Sprintf("m%d", i))
		}
		return mcpgo.NewToolResultText("burst done"), nil
	}
	ta := agenttest.New(t, agenttest.ProxyOneServer, down)
	msgs := ta.RawCall(t, "px", "read", map[string]any{"progressToken": 5}, false)
	if len(msgs) != n+1 || msgs[n]["result"] == nil {
		t.Fatalf("got %d messages, want %d notifications and the result", len(msgs), n)
	}
	for i, m := range msgs[:n] {
		if p := m["params"].(map[string]any); p["progress"] != float64(i+1) || p["message"] != fmt.Sprintf("m%d", i+1) || p["progressToken"] != 5.0 {
			t.Fatalf("#%d out of order or changed: %v", i, p)
		}
	}
	if dropped := agenttest.CounterValue(ta.Metrics.Progress.WithLabelValues("dropped")); dropped != 0 {
		t.Errorf("%v notifications dropped", dropped)
	}
}

// A tool of a server that is down is not "not found": the caller is told
// the server is unavailable, and why; a name no server has is "not found"
// once, not mcp-go's "tool 'x' not found: tool not found".
func TestProxyServerDownIsUnavailable(t *testing.T) {
	down := agenttest.TwoServersDown()
	down.ListErr = map[string]error{"b": errors.New("dial tcp 127.0.0.1:2: connect: connection refused")}
	ta := agenttest.New(t, agenttest.ProxyTwoServers+"  talk: {model: passthrough}\n", down)
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("protocol "+v, func(t *testing.T) {
			cs := ta.Session(t, "px", "bob", v, nil)
			// Not the caller's mistake: an isError result, not a protocol error.
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "b__echo"})
			if err != nil || !res.IsError || !strings.Contains(agenttest.AllText(res), "server b is unavailable: dial tcp 127.0.0.1:2: connect: connection refused") {
				t.Errorf("b__echo with b down: %v %v, want an isError result: b unavailable with the cause", err, res)
			}
			_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "a__nope"})
			if err == nil || !strings.Contains(err.Error(), `tool "a__nope" not found`) || strings.Count(err.Error(), "not found") != 1 {
				t.Errorf("a__nope: %v, want one plain not found", err)
			}
			if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "a__echo"}); err != nil || agenttest.AllText(res) != "from a" {
				t.Errorf("a__echo: %v %v", err, res)
			}
			talk := ta.Session(t, "talk", "bob", v, nil)
			_, err = talk.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"})
			if err == nil || !strings.Contains(err.Error(), `tool "nope" not found`) || strings.Count(err.Error(), "not found") != 1 {
				t.Errorf("talk's nope: %v, want one plain not found", err)
			}
		})
	}
}
