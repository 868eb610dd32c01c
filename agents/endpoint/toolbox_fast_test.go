package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

const toolboxFastConfig = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
policy:
  callers:
    alice: {tools: {deny: ["files__text"]}}
agents:
  tb: {kind: toolbox, title: Files, description: "files, toolbox", servers: [files]}
`

// countedRaw is rawFakeDown counting its raw calls and keeping the last
// one's arguments.
type countedRaw struct {
	rawFakeDown
	raw  *atomic.Int64
	args *atomic.Value // string
}

func (c countedRaw) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcpclient.RawResult, error) {
	c.raw.Add(1)
	c.args.Store(string(args))
	return c.rawFakeDown.CallToolRaw(ctx, server, tool, args, hdr, onProgress, opts)
}

// toolboxPair is the toolbox of toolboxFastConfig served twice: with the
// fast path over a downstream that gives raw results, and the way it was
// served before it had one (every session-based call through mcp-go, a
// 2026-07-28 call through the input-required bridge on mcp-go's handler,
// results typed).
type toolboxPair struct {
	fast, slow *agenttest.Agents
	raw        atomic.Int64 // raw downstream calls of the fast one
	rawArgs    atomic.Value // the arguments of the last one
	via        *viaLog      // the fast one's downstream calls
}

func newToolboxPair(t *testing.T) *toolboxPair {
	t.Helper()
	p := &toolboxPair{via: &viaLog{entered: make(chan string, 16)}}
	for _, slow := range []bool{false, true} {
		down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": nil}}
		for _, n := range fastTools {
			down.ToolLists["files"] = append(down.ToolLists["files"], mcpgo.NewTool(n))
		}
		down.Relayed = func(ctx context.Context, _, tool string, _ map[string]any, onProgress mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
			if !slow {
				path := "fast"
				if server.ClientSessionFromContext(ctx) != nil {
					path = "mcp-go"
				}
				p.via.mu.Lock()
				p.via.calls = append(p.via.calls, tool+" "+path)
				p.via.mu.Unlock()
				select {
				case p.via.entered <- tool:
				default:
				}
			}
			return fastResult(ctx, tool, onProgress, rel)
		}
		var d mcpclient.Downstream = down
		if !slow {
			d = countedRaw{rawFakeDown{down}, &p.raw, &p.rawArgs}
		}
		ta := agenttest.New(t, toolboxFastConfig, d)
		if slow {
			ta.ThroughMCPGo()
			p.slow = ta
		} else {
			p.fast = ta
		}
	}
	return p
}

// executeBody is an execute_tool call of the downstream's tool with id;
// meta is the inside of _meta.
func executeBody(id, tool, meta string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"execute_tool",`+
		`"arguments":{"server":"files","tool":%q,"args":{"a":1,"big":12345678901234567890}},"_meta":{%s}}}`, id, tool, meta)
}

// An execute_tool call answers a caller on the fast path as it did
// through mcp-go, with the downstream's result taken raw.
func TestToolboxFastMatchesMCPGo(t *testing.T) {
	agenttest.NeedFast(t)
	p := newToolboxPair(t)
	for _, s := range callerStyles {
		for _, tool := range fastTools {
			if tool == "block" || tool == "input_required" {
				continue // block: TestToolboxFastCancel; input_required: answered by the bridge, not the tool
			}
			t.Run(s.name+"/"+tool, func(t *testing.T) {
				meta := s.meta
				if tool == "progress" || tool == "burst" {
					meta = strings.TrimPrefix(meta+`,"progressToken":"tok"`, ",")
				}
				before := p.raw.Load()
				hdr := s.hdr("execute_tool")
				got, want := p.fast.Send(t, "tb", executeBody("7", tool, meta), hdr), p.slow.Send(t, "tb", executeBody("7", tool, meta), hdr)
				if !sameExchange(got, want) {
					t.Errorf("fast path differs from mcp-go:\nfast:   %s\nmcp-go: %s", got, want)
				}
				if p.raw.Load() != before+1 {
					t.Errorf("the downstream was called %d times raw, want once", p.raw.Load()-before)
				}
				if via := p.via.last(); via != tool+" fast" {
					t.Errorf("the call went %s, want the fast path", via)
				}
			})
		}
	}
	t.Run("arguments go as the caller wrote them", func(t *testing.T) {
		p.fast.Send(t, "tb", executeBody("1", "text", ""), legacySSE)
		if got, _ := p.rawArgs.Load().(string); got != `{"a":1,"big":12345678901234567890}` {
			t.Errorf("downstream got the arguments %s", got) // through mcp-go's types: 12345678901234567000
		}
	})
	t.Run("refusals and bad arguments", func(t *testing.T) {
		for _, c := range []struct{ name, args, caller string }{
			{"denied tool", `{"server":"files","tool":"text"}`, "alice"},
			{"denied tool, caller named by agent_id", `{"server":"files","tool":"text","agent_id":"alice"}`, ""},
			{"agent_id not a string", `{"server":"files","tool":"text","agent_id":7}`, ""},
			{"args not an object", `{"server":"files","tool":"text","args":[1]}`, ""},
			{"args null", `{"server":"files","tool":"text","args":null}`, ""},
			{"no tool", `{"server":"files"}`, ""},
			{"unknown server", `{"server":"nope","tool":"text"}`, ""},
			{"unknown tool", `{"server":"files","tool":"nope"}`, ""},
			{"bad timeout", `{"server":"files","tool":"text","timeout_ms":0}`, ""},
			{"arguments not an object", `[1,2]`, ""},
			{"no arguments", ``, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_tool","arguments":` + c.args + `}}`
				if c.args == "" {
					body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_tool"}}`
				}
				hdr := with(legacySSE, "X-Test-Caller", c.caller)
				got, want := p.fast.Send(t, "tb", body, hdr), p.slow.Send(t, "tb", body, hdr)
				if !sameExchange(got, want) {
					t.Errorf("fast path differs from mcp-go:\nfast:   %s\nmcp-go: %s", got, want)
				}
			})
		}
	})
}

// A session-based caller's notifications/cancelled reaches its fast
// execute_tool call.
func TestToolboxFastCancel(t *testing.T) {
	agenttest.NeedFast(t)
	p := newToolboxPair(t)
	answer := make(chan agenttest.Exchange, 1)
	go func() { answer <- p.fast.Send(t, "tb", executeBody("7", "block", ""), legacySSE) }()
	if tool := <-p.via.entered; tool != "block" {
		t.Fatalf("entered %s", tool)
	}
	cancelMsg := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`
	if x := p.fast.Send(t, "tb", cancelMsg, legacySSE); x.Status != 202 {
		t.Errorf("cancel answered %s", x)
	}
	x := <-answer
	if x.Status != 200 || !strings.Contains(x.Body, "context canceled") || !strings.Contains(x.Body, `"isError":true`) {
		t.Errorf("cancelled call answered %s", x)
	}
	if p.via.last() != "block fast" {
		t.Errorf("the call went %s", p.via.last())
	}
	noTrackedCalls(t, p.fast)
}
