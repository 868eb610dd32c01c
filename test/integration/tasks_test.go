package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tasks extension through a proxy agent: a task-augmented tools/call
// creates a task on the downstream that owns the tool, and tasks/get,
// tasks/result, tasks/cancel and tasks/list reach it by the id the caller
// got ("<server>/<tag>/<downstream id>", the tag binding it to its
// creator), on any replica that shares the state key.

// taskDown is an mcp-go downstream (stateless Streamable HTTP) with a
// task-capable tool "hold" that finishes when the test releases it.
type taskDown struct {
	ts      *httptest.Server
	release chan struct{}

	mu      sync.Mutex
	tenants map[string]map[string]bool // method → X-Tenant-ID values it came with
}

// tenantsOf lists the X-Tenant-ID values method came with.
func (d *taskDown) tenantsOf(method string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for v := range d.tenants[method] {
		out = append(out, v)
	}
	return out
}

func newTaskDown(t *testing.T, tasks bool) *taskDown {
	t.Helper()
	d := &taskDown{release: make(chan struct{})}
	stop := make(chan struct{})
	opts := []server.ServerOption{server.WithToolCapabilities(false)}
	if tasks {
		opts = append(opts, server.WithTaskCapabilities(true, true, true))
	}
	s := server.NewMCPServer("taskdown", "1", opts...)
	s.AddTool(mcpgo.NewTool("hold", mcpgo.WithTaskSupport(mcpgo.TaskSupportOptional)),
		func(_ context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			// The request's context ends with its HTTP request; the task runs
			// on until released (or the test ends).
			select {
			case <-d.release:
				return mcpgo.NewToolResultText("held and released"), nil
			case <-stop:
				return nil, fmt.Errorf("test over")
			}
		})
	h := server.NewStreamableHTTPServer(s, server.WithStateLess(true))
	d.tenants = map[string]map[string]bool{}
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			d.mu.Lock()
			if d.tenants[m.Method] == nil {
				d.tenants[m.Method] = map[string]bool{}
			}
			d.tenants[m.Method][r.Header.Get("X-Tenant-ID")] = true
			d.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(stop); d.ts.Close() })
	return d
}

const tasksCfg = `
name: tasks
listen: "127.0.0.1:{{PORT}}"
state_key: %q
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
policy:
  callers:
    web: {servers: [tasky, plain]}
mcp:
  servers:
    tasky: {url: %q, forward_headers: {X-Tenant-ID: X-Tenant-ID}}
    other: {url: %q}
    plain: {url: %q}
agents:
  px: {kind: proxy, servers: [tasky, other]}
  flat: {kind: proxy, servers: [plain]}
`

// taskRPC POSTs one 2026-07-28 request and returns the HTTP status and the
// JSON-RPC answer.
func taskRPC(t *testing.T, url, who, method string, params map[string]any, hdr ...string) (int, map[string]any) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "it", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	req.Header.Set("Authorization", "Bearer "+who+"-token-0123456789abcdef")
	req.Header.Set("X-Tenant-ID", "tenant-"+who)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return postRPC(t, req)
}

func rpcResult(t *testing.T, what string, msg map[string]any) map[string]any {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	if res == nil {
		t.Fatalf("%s: no result: %v", what, msg)
	}
	return res
}

func rpcError(t *testing.T, what string, msg map[string]any) (float64, string) {
	t.Helper()
	e, _ := msg["error"].(map[string]any)
	if e == nil {
		t.Fatalf("%s: want an error, got %v", what, msg)
	}
	code, _ := e["code"].(float64)
	m, _ := e["message"].(string)
	return code, m
}

func taskStatus(t *testing.T, url, who, id string) string {
	t.Helper()
	_, msg := taskRPC(t, url, who, "tasks/get", map[string]any{"taskId": id})
	res := rpcResult(t, "tasks/get "+id, msg)
	if res["taskId"] != id {
		t.Fatalf("tasks/get %s: taskId %v", id, res["taskId"])
	}
	s, _ := res["status"].(string)
	return s
}

func TestProxyTasks(t *testing.T) {
	tasky, other, plain := newTaskDown(t, true), newTaskDown(t, true), newTaskDown(t, false)
	cfg := fmt.Sprintf(tasksCfg, stateKeyB64, tasky.ts.URL, other.ts.URL, plain.ts.URL)
	g1, g2 := startGateway(t, cfg), startGateway(t, cfg) // two replicas of one config
	px1, px2 := g1.Base+"/agents/px/mcp", g2.Base+"/agents/px/mcp"

	t.Run("advertised", func(t *testing.T) {
		// The extension (2026-07-28) and the capability, from the downstreams.
		_, msg := taskRPC(t, px1, "web", "server/discover", nil)
		caps, _ := rpcResult(t, "discover", msg)["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		if _, ok := ext["io.modelcontextprotocol/tasks"]; !ok || caps["tasks"] == nil {
			t.Fatalf("px does not advertise tasks: %v", caps)
		}
		// The capability at a session-based initialize.
		if caps := legacyInit(t, px1); caps["tasks"] == nil {
			t.Fatalf("px does not declare tasks at initialize: %v", caps)
		}
	})
	t.Run("lifecycle", func(t *testing.T) { taskLifecycle(t, tasky, px1, px2) })
	t.Run("credentials", func(t *testing.T) {
		// Every downstream request of the tasks went out with the caller's
		// forwarded header, as its tools/call did.
		for _, m := range []string{"tools/call", "tasks/get", "tasks/list", "tasks/cancel", "tasks/result"} {
			if got := tasky.tenantsOf(m); len(got) != 1 || got[0] != "tenant-web" {
				t.Errorf("%s reached the downstream with X-Tenant-ID %q, want only tenant-web", m, got)
			}
		}
	})
	t.Run("forged", func(t *testing.T) {
		// A forged id naming a server web may not use is refused; so is one
		// naming no server of the agent.
		for _, forged := range []string{"other/0b0e4f5c-forged", "nowhere/x"} {
			status, msg := taskRPC(t, px1, "web", "tasks/get", map[string]any{"taskId": forged})
			code, m := rpcError(t, "forged "+forged, msg)
			if code != -32602 || status != 400 || !strings.Contains(m, "task") {
				t.Fatalf("forged %s: %d %v %q", forged, status, code, m)
			}
		}
	})
	t.Run("other caller", func(t *testing.T) {
		// Callers whose outbound credentials are alike share the
		// downstream's task store (here a stateless one): another caller
		// can neither read, cancel nor list the task, on either replica.
		_, msg := taskRPC(t, px1, "web", "tools/call", map[string]any{"name": "tasky__hold", "arguments": map[string]any{},
			"task": map[string]any{"ttl": 600000}})
		task, _ := rpcResult(t, "create", msg)["task"].(map[string]any)
		id, _ := task["taskId"].(string)
		for _, px := range []string{px1, px2} {
			for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
				status, msg := taskRPC(t, px, "ops", m, map[string]any{"taskId": id})
				if code, text := rpcError(t, "ops "+m, msg); code != -32602 || status != 400 || !strings.Contains(text, "not found") {
					t.Fatalf("ops %s of web's task: %d %v %q", m, status, code, text)
				}
			}
			_, msg = taskRPC(t, px, "ops", "tasks/list", nil)
			if listed, _ := json.Marshal(rpcResult(t, "ops tasks/list", msg)["tasks"]); strings.Contains(string(listed), id[strings.LastIndex(id, "/")+1:]) {
				t.Fatalf("ops lists web's task: %s", listed)
			}
		}
		if s := taskStatus(t, px2, "web", id); s != "working" && s != "completed" {
			t.Fatalf("web's own task reads %s", s)
		}
	})
	t.Run("header mismatch", func(t *testing.T) {
		// A task-augmented call whose Mcp-Name contradicts its body gets
		// the protocol's header-mismatch error, as any call does.
		status, msg := taskRPC(t, px1, "web", "tools/call", map[string]any{"name": "tasky__hold", "arguments": map[string]any{},
			"task": map[string]any{"ttl": 600000}}, "Mcp-Name", "other__hold")
		if code, _ := rpcError(t, "mismatch", msg); code != -32020 || status != 400 {
			t.Fatalf("mismatched Mcp-Name: %d %v", status, msg)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		// A task id the downstream does not know (its session gone, or
		// never): the downstream's not-found, with the reason.
		for _, id := range []string{"tasky/no-such-task", "tasky/AAAAAAAAAAAAAAAAAAAAAA/no-such-task"} {
			_, msg := taskRPC(t, px1, "web", "tasks/get", map[string]any{"taskId": id})
			if code, m := rpcError(t, "unknown", msg); code != -32602 || !strings.Contains(m, "not found") {
				t.Fatalf("unknown task %s: %v %q", id, code, m)
			}
		}
	})
	t.Run("flat", func(t *testing.T) {
		// An agent whose downstreams lack tasks advertises none and does
		// not know tasks/*.
		flat := g1.Base + "/agents/flat/mcp"
		_, msg := taskRPC(t, flat, "web", "server/discover", nil)
		caps, _ := rpcResult(t, "flat discover", msg)["capabilities"].(map[string]any)
		if ext, _ := caps["extensions"].(map[string]any); caps["tasks"] != nil || ext["io.modelcontextprotocol/tasks"] != nil {
			t.Fatalf("flat advertises tasks: %v", caps)
		}
		if caps := legacyInit(t, flat); caps["tasks"] != nil {
			t.Fatalf("flat declares tasks at initialize: %v", caps)
		}
		for _, m := range []string{"tasks/get", "tasks/list"} {
			_, msg = taskRPC(t, flat, "web", m, map[string]any{"taskId": "plain/x"})
			if code, _ := rpcError(t, "flat "+m, msg); code != -32601 {
				t.Fatalf("flat %s: %v", m, msg)
			}
		}
	})
}

// legacyInit is a 2025-11-25 initialize of url by web; it returns the
// declared capabilities.
func legacyInit(t *testing.T, url string) map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer web-token-0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result struct {
			Capabilities map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &msg); err != nil || msg.Result.Capabilities == nil {
		t.Fatalf("initialize: %d %q", resp.StatusCode, raw)
	}
	return msg.Result.Capabilities
}

// taskLifecycle creates two tasks through px1, reads them through px2 (the
// other replica), lists them, cancels one, and polls the other until it
// completes once released, then fetches its result.
func taskLifecycle(t *testing.T, tasky *taskDown, px1, px2 string) {

	create := func(url string) string {
		t.Helper()
		_, msg := taskRPC(t, url, "web", "tools/call", map[string]any{"name": "tasky__hold", "arguments": map[string]any{},
			"task": map[string]any{"ttl": 600000}})
		task, _ := rpcResult(t, "create", msg)["task"].(map[string]any)
		id, _ := task["taskId"].(string)
		if !strings.HasPrefix(id, "tasky/") || len(id) <= len("tasky/") || task["status"] != "working" {
			t.Fatalf("created task %v", msg)
		}
		return id
	}
	done, stopped := create(px1), create(px1)
	var msg map[string]any

	// The second replica serves the first one's task.
	if s := taskStatus(t, px2, "web", done); s != "working" {
		t.Fatalf("tasks/get on the second replica: %s", s)
	}
	// tasks/list merges the caller's servers' lists, ids named: the tasks
	// the caller created through this replica.
	_, msg = taskRPC(t, px1, "web", "tasks/list", nil)
	listed, _ := json.Marshal(rpcResult(t, "tasks/list", msg)["tasks"])
	if !strings.Contains(string(listed), `"`+done+`"`) || !strings.Contains(string(listed), `"`+stopped+`"`) {
		t.Fatalf("tasks/list %s: want %s and %s", listed, done, stopped)
	}

	// Cancel one.
	_, msg = taskRPC(t, px1, "web", "tasks/cancel", map[string]any{"taskId": stopped})
	if res := rpcResult(t, "tasks/cancel", msg); res["status"] != "cancelled" || res["taskId"] != stopped {
		t.Fatalf("tasks/cancel: %v", res)
	}
	if s := taskStatus(t, px2, "web", stopped); s != "cancelled" {
		t.Fatalf("cancelled task reads %s", s)
	}

	// Release the other, poll until it completes, fetch its result.
	close(tasky.release)
	for i := 0; ; i++ {
		s := taskStatus(t, px1, "web", done)
		if s == "completed" {
			break
		}
		if s != "working" || i == 2000 {
			t.Fatalf("task %s: status %s after %d polls", done, s, i)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, msg = taskRPC(t, px2, "web", "tasks/result", map[string]any{"taskId": done})
	res := rpcResult(t, "tasks/result", msg)
	if b, _ := json.Marshal(res["content"]); !strings.Contains(string(b), "held and released") {
		t.Fatalf("tasks/result: %v", msg)
	}
	// The result names its task (_meta related-task) by the caller's id.
	meta, _ := res["_meta"].(map[string]any)
	if rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != done {
		t.Fatalf("tasks/result _meta: %v", res["_meta"])
	}
}
