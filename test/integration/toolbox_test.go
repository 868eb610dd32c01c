package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tbOut is a toolbox result: its text, isError and structuredContent.
type tbOut struct {
	text       string
	isError    bool
	structured map[string]any
	raw        *mcp.CallToolResult
}

func tbCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) tbOut {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	out := tbOut{text: pxText(res), isError: res.IsError, raw: res}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out.structured)
	}
	return out
}

func (o tbOut) code() string {
	e, _ := o.structured["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (o tbOut) toolNames() []string {
	var out []string
	list, _ := o.structured["tools"].([]any)
	for _, d := range list {
		out = append(out, d.(map[string]any)["name"].(string))
	}
	return out
}

const tbPassthroughCfg = `
name: tb
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    alpha: {url: "%s"}
    beta: {url: "%s"}
    gone: {url: "http://127.0.0.1:%d/mcp", timeout: 5s}
policy:
  deny_on_missing_identity: true
  callers:
    reader: {servers: ["alpha", "gone"], tools: {allow: ["alpha__echo", "alpha__image", "alpha__block", "alpha__steps", "gone__*"]}}
agents:
  tb: {kind: toolbox, servers: [alpha, beta, gone], tools: {deny: ["*__admin_*"]}}
`

func TestToolboxPassthrough(t *testing.T) {
	alpha, beta := newPxServer(t, "alpha"), newPxServer(t, "beta")
	g := startGateway(t, fmt.Sprintf(tbPassthroughCfg, alpha.url(), beta.url(), freePorts(t, 1)[0]))
	for _, st := range pxStyles {
		t.Run(st.name, func(t *testing.T) {
			cs := pxConnect(t, g.Base+"/agents/tb/mcp", st.version, nil, nil)
			if got := pxToolNames(t, cs); !reflect.DeepEqual(got, []string{"execute_tool", "get_health", "get_server_tools", "list_servers", "run_script", "search_tools"}) {
				t.Fatalf("toolbox tools: %v", got)
			}
			servers := func(agentID string) string {
				o := tbCall(t, cs, "list_servers", map[string]any{"agent_id": agentID})
				var names []string
				for _, s := range o.structured["servers"].([]any) {
					names = append(names, s.(map[string]any)["name"].(string))
				}
				return strings.Join(names, ",")
			}
			if got := servers("reader"); got != "alpha,gone" {
				t.Errorf("reader's servers: %s", got)
			}
			if got := servers("admin"); got != "alpha,beta,gone" {
				t.Errorf("admin's servers (default rule): %s", got)
			}
			for _, c := range []struct {
				name string
				tool string
				args map[string]any
				code string
			}{
				{"no identity", "list_servers", nil, "DENIED_BY_POLICY"},
				{"server outside the caller's rule", "execute_tool", map[string]any{"agent_id": "reader", "server": "beta", "tool": "echo"}, "DENIED_BY_POLICY"},
				{"tool outside the caller's rule", "execute_tool", map[string]any{"agent_id": "reader", "server": "alpha", "tool": "structured"}, "DENIED_BY_POLICY"},
				{"tool denied by the agent", "execute_tool", map[string]any{"agent_id": "admin", "server": "alpha", "tool": "admin_reset"}, "DENIED_BY_POLICY"},
				{"server down", "get_server_tools", map[string]any{"agent_id": "reader", "server": "gone"}, "SERVER_UNAVAILABLE"},
				{"server unknown", "get_server_tools", map[string]any{"agent_id": "reader", "server": "zeta"}, "SERVER_UNAVAILABLE"},
				{"tool unknown", "execute_tool", map[string]any{"agent_id": "admin", "server": "alpha", "tool": "nope"}, "TOOL_NOT_FOUND"},
				{"too slow", "execute_tool", map[string]any{"agent_id": "reader", "server": "alpha", "tool": "block", "timeout_ms": 300}, "TIMEOUT"},
				{"tool missing", "execute_tool", map[string]any{"agent_id": "reader", "server": "alpha"}, "INVALID_ARGUMENTS"},
				{"bad pattern", "get_server_tools", map[string]any{"agent_id": "reader", "server": "alpha", "pattern": "[x"}, "INVALID_ARGUMENTS"},
			} {
				o := tbCall(t, cs, c.tool, c.args)
				if !o.isError || o.code() != c.code || !strings.HasPrefix(o.text, c.code+": ") {
					t.Errorf("%s: isError=%v code=%q text=%q, want %s", c.name, o.isError, o.code(), o.text, c.code)
				}
				if msg, _ := o.structured["error"].(map[string]any)["message"].(string); msg == "" {
					t.Errorf("%s: no error.message in %v", c.name, o.structured)
				}
			}

			o := tbCall(t, cs, "get_server_tools", map[string]any{"agent_id": "admin", "server": "alpha", "pattern": "s*"})
			if got := o.toolNames(); !reflect.DeepEqual(got, []string{"steps", "structured"}) || o.isError {
				t.Errorf("pattern s*: %v (%s)", got, o.text)
			}
			o = tbCall(t, cs, "get_server_tools", map[string]any{"agent_id": "admin", "server": "alpha", "names": []string{"echo", "image", "admin_reset"}})
			if got := o.toolNames(); !reflect.DeepEqual(got, []string{"echo", "image"}) {
				t.Errorf("names (admin_* denied by the agent): %v", got)
			}
			full := tbCall(t, cs, "get_server_tools", map[string]any{"agent_id": "admin", "server": "alpha"})
			all := full.toolNames()
			if full.structured["truncated"] != false || len(all) != 6 {
				t.Fatalf("all of alpha: %v %v", all, full.structured)
			}
			budget := int(full.structured["tokens_used"].(float64)) - 1
			o = tbCall(t, cs, "get_server_tools", map[string]any{"agent_id": "admin", "server": "alpha", "max_schema_tokens": budget})
			if got := o.toolNames(); o.structured["truncated"] != true || len(got) != len(all)-1 || o.structured["tokens_used"].(float64) > float64(budget) {
				t.Errorf("budget %d: %v %v", budget, got, o.structured)
			}

			o = tbCall(t, cs, "execute_tool", map[string]any{"agent_id": "reader", "server": "alpha", "tool": "image"})
			img, _ := o.raw.Content[1].(*mcp.ImageContent)
			if o.isError || img == nil || !bytes.Equal(img.Data, alpha.png) {
				t.Errorf("execute_tool must return the downstream result unchanged: %+v", o.raw.Content)
			}
			o = tbCall(t, cs, "execute_tool", map[string]any{"agent_id": "admin", "server": "alpha", "tool": "structured"})
			if !o.isError || o.structured["used"] != 11.0 || o.code() != "" {
				t.Errorf("a downstream isError result passes unchanged: %+v", o)
			}
		})
	}
	for _, want := range []string{`"caller":"reader","agent":"tb","server":"beta","tool":"echo","decision":"deny"`,
		`"caller":"reader","agent":"tb","server":"alpha","tool":"image","decision":"allow"`, `"reason":"missing_identity"`,
		// the rule that decided, the outcome after the call, the result's size
		`"tool":"image","decision":"allow","reason":"allowed","rule":"policy.callers.reader.tools.allow","outcome":"allow","result_bytes":`,
		`"tool":"admin_reset","decision":"deny","reason":"tool_denied","rule":"agents.tb.tools.deny","outcome":"deny"`,
		`"tool":"block","decision":"allow","reason":"allowed","rule":"policy.callers.reader.tools.allow","outcome":"timeout"`} {
		if !g.logged(want) {
			t.Errorf("no audit line with %s", want)
		}
	}
	pxWaitMetric(t, g, `pallasgw_tool_calls_total{agent="tb",caller="reader",outcome="timeout",tool="execute_tool"}`, 2)
}

// execute_tool relays the downstream progress to its caller.
func TestToolboxProgress(t *testing.T) {
	alpha, beta := newPxServer(t, "alpha"), newPxServer(t, "beta")
	g := startGateway(t, fmt.Sprintf(tbPassthroughCfg, alpha.url(), beta.url(), freePorts(t, 1)[0]))
	seen := make(chan *mcp.ProgressNotificationParams, 10)
	cs := pxConnect(t, g.Base+"/agents/tb/mcp", "", nil, func(p *mcp.ProgressNotificationParams) { seen <- p })
	done := make(chan tbOut, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_tool", Meta: mcp.Meta{"progressToken": "tb-1"},
			Arguments: map[string]any{"agent_id": "reader", "server": "alpha", "tool": "steps", "args": map[string]any{"n": 2, "run": 7}}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- tbOut{text: pxText(res), isError: res.IsError}
	}()
	for step := 1.0; step <= 2; step++ {
		p := pxWithin(t, 10*time.Second, fmt.Sprintf("progress %v", step), seen)
		if p.ProgressToken != "tb-1" || p.Progress != step || p.Total != 2 {
			t.Errorf("step %v: %+v", step, p)
		}
		close(alpha.gate(700 + step))
	}
	if o := pxWithin(t, 10*time.Second, "the result", done); o.isError || o.text != "all steps done" {
		t.Errorf("result: %+v", o)
	}
}

// In tokens mode the token's name is the caller; agent_id is not offered
// and cannot change who is calling.
func TestToolboxTokensTwoCallers(t *testing.T) {
	alpha := newPxServer(t, "alpha")
	g := startGateway(t, fmt.Sprintf(`
name: tb
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abc}
    - {name: ops, token: ops-token-0123456789abc}
mcp:
  servers:
    alpha: {url: "%s"}
policy:
  callers:
    web: {tools: {allow: ["alpha__echo"]}}
agents:
  tb: {kind: toolbox, servers: [alpha]}
`, alpha.url()))
	web := pxConnect(t, g.Base+"/agents/tb/mcp", "", map[string]string{"Authorization": "Bearer web-token-0123456789abc"}, nil)
	ops := pxConnect(t, g.Base+"/agents/tb/mcp", "2025-11-25", map[string]string{"Authorization": "Bearer ops-token-0123456789abc"}, nil)
	if got := tbCall(t, web, "get_server_tools", map[string]any{"server": "alpha"}).toolNames(); !reflect.DeepEqual(got, []string{"echo"}) {
		t.Errorf("web sees %v", got)
	}
	if got := tbCall(t, ops, "get_server_tools", map[string]any{"server": "alpha"}).toolNames(); len(got) != 7 {
		t.Errorf("ops sees %v", got)
	}
	if o := tbCall(t, web, "execute_tool", map[string]any{"server": "alpha", "tool": "image", "agent_id": "ops"}); o.code() != "DENIED_BY_POLICY" {
		t.Errorf("web posing as ops: %+v", o)
	}
	if o := tbCall(t, ops, "execute_tool", map[string]any{"server": "alpha", "tool": "echo", "args": map[string]any{"text": "x"}}); o.isError || o.text != "alpha:x" {
		t.Errorf("ops echo: %+v", o)
	}
	res, err := web.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if b, _ := json.Marshal(tl.InputSchema); strings.Contains(string(b), "agent_id") {
			t.Errorf("%s offers agent_id in tokens mode", tl.Name)
		}
	}
}
