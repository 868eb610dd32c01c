package toolbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/kinds/toolbox"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

const toolboxCfg = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
    search: {url: "http://127.0.0.1:2/mcp"}
    down: {url: "http://127.0.0.1:3/mcp"}
    other: {url: "http://127.0.0.1:4/mcp"}
policy:
  deny_on_missing_identity: %v
  callers:
    alice: {servers: ["files", "search", "down"], tools: {deny: ["files__write"]}}
    mallory: {agents: ["nothing"]}
agents:
  tb: {kind: toolbox, servers: [files, search, down], tools: {deny: ["search__secret"]}}
`

func toolboxDown() *agenttest.FakeDown {
	long := mcpgo.NewTool("get_long", mcpgo.WithDescription(strings.Repeat("x", 400)))
	return &agenttest.FakeDown{
		ToolLists: map[string][]mcpgo.Tool{
			"files":  {mcpgo.NewTool("read", mcpgo.WithString("path")), mcpgo.NewTool("write"), mcpgo.NewTool("get_a"), mcpgo.NewTool("get_b"), long, mcpgo.NewTool("slow")},
			"search": {mcpgo.NewTool("query"), mcpgo.NewTool("secret")},
		},
		ListErr: map[string]error{"down": fmt.Errorf("downstream %q: connecting: %w", "down", mcpclient.ErrUnavailable)},
		Results: map[string]*mcpgo.CallToolResult{
			"files/read": {Content: []mcpgo.Content{mcpgo.NewImageContent("iVBORw0KGgo=", "image/png")}, StructuredContent: map[string]any{"ok": true}},
		},
	}
}

type tbResult struct {
	text       string
	isError    bool
	structured map[string]any
}

func tbCallTool(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) tbResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var r tbResult
	r.text, r.isError = agenttest.AllText(res), res.IsError
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &r.structured)
	}
	return r
}

func (r tbResult) code() string {
	e, _ := r.structured["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestToolboxErrorCodes(t *testing.T) {
	down := toolboxDown()
	down.Call = func(ctx context.Context, server, tool string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		switch tool {
		case "slow":
			<-ctx.Done()
			return nil, fmt.Errorf("downstream %q: tools/call: %w", server, ctx.Err())
		case "query":
			return nil, fmt.Errorf("downstream %q: tools/call: %w: missing q", server, mcpgo.ErrInvalidParams)
		}
		return down.Results[server+"/"+tool], nil
	}
	ta := agenttest.New(t, fmt.Sprintf(toolboxCfg, false), down)
	alice := ta.Session(t, "tb", "", "", nil)
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
		code string
	}{
		{"tool denied by the agent", "execute_tool", map[string]any{"server": "search", "tool": "secret", "agent_id": "alice"}, toolbox.CodeDenied},
		{"tool denied by the caller rule", "execute_tool", map[string]any{"server": "files", "tool": "write", "agent_id": "alice"}, toolbox.CodeDenied},
		{"caller may not use the agent", "list_servers", map[string]any{"agent_id": "mallory"}, toolbox.CodeDenied},
		{"server not the agent's", "get_server_tools", map[string]any{"server": "other", "agent_id": "alice"}, toolbox.CodeUnavailable},
		{"server unreachable", "get_server_tools", map[string]any{"server": "down", "agent_id": "alice"}, toolbox.CodeUnavailable},
		{"server unreachable on call", "execute_tool", map[string]any{"server": "down", "tool": "x", "agent_id": "alice"}, toolbox.CodeUnavailable},
		{"unknown tool", "execute_tool", map[string]any{"server": "files", "tool": "nope", "agent_id": "alice"}, toolbox.CodeToolNotFound},
		{"timeout", "execute_tool", map[string]any{"server": "files", "tool": "slow", "timeout_ms": 50, "agent_id": "alice"}, toolbox.CodeTimeout},
		{"downstream rejects arguments", "execute_tool", map[string]any{"server": "search", "tool": "query", "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"server missing", "execute_tool", map[string]any{"tool": "read", "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"args not an object", "execute_tool", map[string]any{"server": "files", "tool": "read", "args": "x", "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"bad timeout", "execute_tool", map[string]any{"server": "files", "tool": "read", "timeout_ms": 1.5, "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"bad pattern", "get_server_tools", map[string]any{"server": "files", "pattern": "[", "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"bad budget", "get_server_tools", map[string]any{"server": "files", "max_schema_tokens": 0, "agent_id": "alice"}, toolbox.CodeInvalidArgument},
		{"agent_id not a string", "list_servers", map[string]any{"agent_id": 7}, toolbox.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tbCallTool(t, alice, tc.tool, tc.args)
			if !r.isError || r.code() != tc.code || !strings.HasPrefix(r.text, tc.code+": ") {
				t.Errorf("got isError=%v code=%q text=%q, want %s", r.isError, r.code(), r.text, tc.code)
			}
		})
	}
	// TIMEOUT says which timeout ended the call.
	if r := tbCallTool(t, alice, "execute_tool", map[string]any{"server": "files", "tool": "slow", "timeout_ms": 50, "agent_id": "alice"}); !strings.Contains(r.text, "did not answer within timeout_ms 50 (50ms)") {
		t.Errorf("TIMEOUT text %q does not say the timeout", r.text)
	}
	for _, c := range down.CallLog() {
		if c == "search/secret" || c == "files/write" {
			t.Errorf("a denied tool reached the downstream: %s", c)
		}
	}

	r := tbCallTool(t, alice, "execute_tool", map[string]any{"server": "files", "tool": "read", "args": map[string]any{"path": "/x"}, "agent_id": "alice"})
	if r.isError || r.structured["ok"] != true {
		t.Errorf("execute_tool must return the downstream result unchanged: %+v", r)
	}
}

func TestToolboxDiscovery(t *testing.T) {
	ta := agenttest.New(t, fmt.Sprintf(toolboxCfg, false), toolboxDown())
	cs := ta.Session(t, "tb", "", "2025-11-25", nil)
	r := tbCallTool(t, cs, "list_servers", map[string]any{"agent_id": "alice"})
	if got := fmt.Sprint(r.structured["servers"]); got != "[map[name:files transport:http] map[name:search transport:http] map[name:down transport:http]]" {
		t.Errorf("list_servers: %s", got)
	}
	names := func(r tbResult) []string {
		var out []string
		for _, d := range r.structured["tools"].([]any) {
			out = append(out, d.(map[string]any)["name"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		args      map[string]any
		want      []string
		truncated bool
	}{
		{"all allowed", map[string]any{}, []string{"get_a", "get_b", "get_long", "read", "slow"}, false},
		{"pattern", map[string]any{"pattern": "get_*"}, []string{"get_a", "get_b", "get_long"}, false},
		{"names", map[string]any{"names": []any{"read", "write", "nope"}}, []string{"read"}, false},
		{"budget", map[string]any{"pattern": "get_*", "max_schema_tokens": 60}, []string{"get_a", "get_b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.args["server"], tc.args["agent_id"] = "files", "alice"
			r := tbCallTool(t, cs, "get_server_tools", tc.args)
			if r.isError || !reflect.DeepEqual(names(r), tc.want) || r.structured["truncated"] != tc.truncated {
				t.Errorf("got %v truncated=%v (%s), want %v truncated=%v", names(r), r.structured["truncated"], r.text, tc.want, tc.truncated)
			}
			if used := r.structured["tokens_used"].(float64); tc.truncated && used > 60 {
				t.Errorf("tokens_used %v over the budget", used)
			}
		})
	}
	r = tbCallTool(t, cs, "get_server_tools", map[string]any{"server": "files"})
	if got := names(r); !reflect.DeepEqual(got, []string{"get_a", "get_b", "get_long", "read", "slow", "write"}) {
		t.Errorf("without identity (default rule) got %v", got)
	}
}

func TestToolboxIdentity(t *testing.T) {
	ta := agenttest.New(t, fmt.Sprintf(toolboxCfg, true), toolboxDown())
	cs := ta.Session(t, "tb", "", "", nil)
	if r := tbCallTool(t, cs, "list_servers", nil); r.code() != toolbox.CodeDenied || !strings.Contains(r.text, "missing_identity") {
		t.Errorf("deny_on_missing_identity: %+v", r)
	}
	if r := tbCallTool(t, cs, "list_servers", map[string]any{"agent_id": "alice"}); r.isError {
		t.Errorf("agent_id is the identity in passthrough mode: %+v", r)
	}
}

const toolboxTokensCfg = `
name: unit
auth:
  mode: tokens
  tokens:
    - {name: alice, token: a-token-0123456789}
    - {name: bob, token: b-token-0123456789}
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
policy:
  callers:
    alice: {tools: {allow: ["files__read"]}}
agents:
  tb: {kind: toolbox, servers: [files]}
`

// In tokens mode the token's name is the identity; agent_id is neither
// offered nor believed.
func TestToolboxTokensMode(t *testing.T) {
	ta := agenttest.New(t, toolboxTokensCfg, toolboxDown())
	alice := ta.Session(t, "tb", "alice", "", nil)
	tools, err := alice.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.Contains(fmt.Sprint(tl.InputSchema), "agent_id") {
			t.Errorf("%s offers agent_id in tokens mode", tl.Name)
		}
	}
	r := tbCallTool(t, alice, "execute_tool", map[string]any{"server": "files", "tool": "write", "agent_id": "bob"})
	if r.code() != toolbox.CodeDenied {
		t.Errorf("alice posing as bob must stay alice: %+v", r)
	}
	bob := ta.Session(t, "tb", "bob", "", nil)
	if r := tbCallTool(t, bob, "execute_tool", map[string]any{"server": "files", "tool": "read"}); r.isError {
		t.Errorf("bob: %+v", r)
	}
}
