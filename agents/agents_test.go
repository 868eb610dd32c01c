package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// scripted is agenttest.SendConfig over down, its model a ScriptLLM.
func scripted(t *testing.T, down mcpclient.Downstream) *agenttest.Agents {
	t.Helper()
	return agenttest.NewWith(t, agenttest.SendConfig, down, map[string]llm.Provider{"openai": agenttest.NewScriptLLM()})
}

// textDown is a downstream whose server files has one tool, text.
func textDown(call func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error)) *agenttest.FakeDown {
	return &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("text")}}, Call: call}
}

// jsonDown is a Downstream that takes arguments as JSON (CallToolJSON, as
// *mcpclient.Manager does). Both of its calls record what they were sent.
type jsonDown struct {
	*agenttest.FakeDown
	mu   sync.Mutex
	sent []string // "json <arguments>" or "typed <arguments map>"
}

func newJSONDown() *jsonDown {
	d := &jsonDown{}
	d.FakeDown = textDown(func(_ context.Context, _, _ string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		d.record(fmt.Sprintf("typed %v", args))
		return mcpgo.NewToolResultText("typed result"), nil
	})
	return d
}

func (d *jsonDown) record(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, s)
}

func (d *jsonDown) CallToolJSON(_ context.Context, _, _ string, args json.RawMessage, _ http.Header, onProgress mcpclient.ProgressFunc, _ mcpclient.CallOptions) (*mcpgo.CallToolResult, error) {
	d.record("json " + string(args))
	if onProgress != nil {
		onProgress(1, nil, "halfway")
	}
	return mcpgo.NewToolResultText("result of " + string(args)), nil
}

// The tool loop hands a downstream that takes JSON arguments the model's
// arguments as they are (P17), and any other one a decoded map.
func TestToolLoopSendsArgumentsAsJSON(t *testing.T) {
	agenttest.NeedFast(t) // off, every downstream takes a map (callTool)
	down := newJSONDown()
	ta := scripted(t, down)
	x := ta.Send(t, "talk", agenttest.SendBody("1", "send_message", `{"message":"tool please"}`, `"progressToken":"p1"`), agenttest.LegacySSE)
	if !strings.Contains(x.Body, `the tool said: result of {\"q\":1}`) {
		t.Errorf("answered %s", x)
	}
	if !strings.Contains(x.Body, "files/text: halfway") {
		t.Errorf("the downstream's progress was not relayed: %s", x)
	}
	down.mu.Lock()
	if want := []string{`json {"q":1}`}; !reflect.DeepEqual(down.sent, want) {
		t.Errorf("downstream was sent %q, want %q", down.sent, want)
	}
	down.mu.Unlock()

	typed := newJSONDown()
	ta = scripted(t, typed.FakeDown)
	x = ta.Send(t, "talk", agenttest.SendBody("2", "send_message", `{"message":"tool please"}`, ""), agenttest.LegacySSE)
	if !strings.Contains(x.Body, "the tool said: typed result") {
		t.Errorf("answered %s", x)
	}
	typed.mu.Lock()
	defer typed.mu.Unlock()
	if want := []string{"typed map[q:1]"}; !reflect.DeepEqual(typed.sent, want) {
		t.Errorf("downstream was sent %q, want %q", typed.sent, want)
	}
}

// The fast path does not check Mcp-Param-* headers: it relies on the
// send_message schema binding none (agents/wire).
func TestSendMessageSchemaHasNoHeaderBindings(t *testing.T) {
	ta := scripted(t, textDown(nil))
	for name, st := range agents.MCPServer(ta.Set.Get("talk")).ListTools() {
		if b := mcpgo.ExtractParamHeaderBindings(&st.Tool); len(b) != 0 {
			t.Errorf("%s binds headers %v", name, b)
		}
	}
}

// A proxy over one server, files.
const proxyConfig = `
name: unit
mcp: {servers: {files: {url: "http://127.0.0.1:1/mcp"}}}
agents: {px: {kind: proxy, servers: [files]}}
`

// The fast path does not check Mcp-Param-* headers: it relies on no tool
// of a proxy's mcp-go registry binding one (agents/kinds/proxy, fast.go).
func TestProxyRegistryHasNoHeaderBindings(t *testing.T) {
	down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": nil}}
	proxied := []string{"text", "image", "structured", "progress", "block"}
	for _, n := range proxied {
		down.ToolLists["files"] = append(down.ToolLists["files"], mcpgo.NewTool(n))
	}
	ta := agenttest.New(t, proxyConfig, down)
	agenttest.ToolNames(t, ta.Session(t, "px", "bob", "", nil)) // registers the downstream's tools
	tools := agents.MCPServer(ta.Set.Get("px")).ListTools()
	if len(tools) != len(proxied)+1 {
		t.Fatalf("%d tools registered, want %d", len(tools), len(proxied)+1)
	}
	for name, st := range tools {
		if b := mcpgo.ExtractParamHeaderBindings(&st.Tool); len(b) != 0 {
			t.Errorf("%s binds headers %v", name, b)
		}
	}
}

// A panic on a goroutine a call starts (a parallel agent's fan-out, an llm
// agent's tool call) fails that part of the call instead of the process.
func TestPanicOnACallsGoroutineIsAnError(t *testing.T) {
	ta := scripted(t, textDown(func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("hi <b>&</b>"), nil
	}))
	x := ta.Send(t, "fan", agenttest.SendBody("1", "send_message", `{"message":"panic"}`, ""), agenttest.LegacySSE)
	if !strings.Contains(x.Body, "every fan_out agent failed: internal error in agent talk (request id rid-1)") {
		t.Errorf("fan-out of panicking agents answered %s", x)
	}

	ta = scripted(t, textDown(func(context.Context, string, string, map[string]any, mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		panic("downstream client bug")
	}))
	x = ta.Send(t, "talk", agenttest.SendBody("2", "send_message", `{"message":"tool please"}`, ""), agenttest.LegacySSE)
	if !strings.Contains(x.Body, "the tool said: internal error in tool call files__text") {
		t.Errorf("a panicking tool call answered %s", x)
	}
	x = ta.Send(t, "talk", agenttest.SendBody("3", "send_message", `{"message":"two tools"}`, ""), agenttest.LegacySSE)
	if !strings.Contains(x.Body, "the tool said: internal error in tool call files__text") {
		t.Errorf("two panicking tool calls in one turn answered %s", x)
	}
}

// An agent without a send_message (config validation refuses one as a
// sub-agent) fails a call instead of panicking.
func TestRunWithoutSendMessage(t *testing.T) {
	ta := agenttest.New(t, proxyConfig, textDown(nil))
	_, err := ta.Set.Get("px").Run(context.Background(), &agents.Call{Turn: agents.Turn{Message: "hi"}})
	if err == nil || !strings.Contains(err.Error(), "agent px is kind proxy, which has no send_message") {
		t.Errorf("Run of a proxy agent: %v", err)
	}
}

// panickyProbe is a Downstream whose health probe panics.
type panickyProbe struct{ *agenttest.FakeDown }

func (panickyProbe) Probe(context.Context, string, http.Header) error { panic("probe bug") }

// A panic in a health probe degrades the agent's health instead of ending
// the process.
func TestPanicInAHealthProbe(t *testing.T) {
	ta := scripted(t, panickyProbe{textDown(nil)})
	x := ta.Send(t, "talk", agenttest.SendBody("1", "get_health", `{}`, ""), agenttest.LegacySSE)
	if !strings.Contains(x.Body, "internal error in the probe of server files") || !strings.Contains(x.Body, "degraded") {
		t.Errorf("get_health answered %s", x)
	}
}

// A static header that expanded to no credential ("Bearer ${TOKEN:-}"
// with TOKEN unset) is not sent: not a bare "Bearer", and not the caller's
// Authorization either (the static name still owns it).
func TestEmptyCredentialNotSent(t *testing.T) {
	for _, v := range []string{"Bearer", "Bearer ", ""} {
		rules := agents.HeaderRules("s", &config.Server{Headers: map[string]config.Secret{"Authorization": config.Secret(v), "X-Team": "blue"},
			ForwardInboundAuth: true})
		out := (&policy.Composer{}).Compose(rules, http.Header{"Authorization": {"Bearer caller-token"}}, true)
		if _, ok := out["Authorization"]; ok || out.Get("X-Team") != "blue" {
			t.Errorf("static Authorization %q: sent %v", v, out)
		}
	}
}
