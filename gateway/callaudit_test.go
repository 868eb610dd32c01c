package gateway

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// Every tool call an agent answers has an audit line with its request id,
// in passthrough mode too (no inbound authorization is audited there): a
// direct send_message once it has run, with its outcome, as a chain's
// steps are; a call of a name the agent has no tool for, as refused. Both
// ways of serving a call (wire.fast on and off).
func TestEveryToolCallAudited(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(map[bool]string{true: "fast", false: "mcp-go"}[fast], func(t *testing.T) {
			was := wire.Fast()
			wire.SetFast(fast)
			t.Cleanup(func() { wire.SetFast(was) })
			path := filepath.Join(t.TempDir(), "pallasgw.yaml")
			cfg := "name: t\nlisten: \"127.0.0.1:0\"\nagents:\n  oracle: {model: playback, params: {playback: [\"42\"]}}\n"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.InfoLevel)
			g, err := New(Options{ConfigPath: path, Logger: zap.New(core), Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() })
			h := g.router()
			call := func(rid, tool string) string {
				req := httptest.NewRequest(http.MethodPost, "/agents/oracle/mcp", strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"message":"hi"}}}`))
				req.RemoteAddr, req.Host = "127.0.0.1:5000", "127.0.0.1:8200"
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("X-Request-Id", rid)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Body.String()
			}
			for _, c := range []struct{ rid, tool, decision, reason, outcome string }{
				{"rid-send-0001", "send_message", "allow", "allowed", "allow"},
				{"rid-none-0002", "no_such_tool", "deny", "tool_not_found", "deny"},
			} {
				body := call(c.rid, c.tool)
				lines := logs.FilterMessage("policy decision").FilterField(zap.String("request_id", c.rid)).AllUntimed()
				if len(lines) != 1 {
					t.Errorf("%s: %d audit lines with its request id, want 1 (answer %s)", c.tool, len(lines), body)
					continue
				}
				m := lines[0].ContextMap()
				if m["agent"] != "oracle" || m["tool"] != c.tool || m["decision"] != c.decision || m["reason"] != c.reason ||
					m["outcome"] != c.outcome || m["caller"] != "anonymous" {
					t.Errorf("%s: audit line %v", c.tool, m)
				}
			}
		})
	}
}

// A request the gateway refuses before any agent runs (no audit line names
// it) is logged with its request id: an unknown agent, a body that is no
// JSON-RPC message, a body over limits.max_body_bytes.
func TestRefusedRequestsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	cfg := "name: t\nlisten: \"127.0.0.1:0\"\nlimits: {max_body_bytes: 200}\nagents:\n  echo: {model: passthrough}\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	g, err := New(Options{ConfigPath: path, Logger: zap.New(core), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() })
	h := g.router()
	for _, c := range []struct {
		rid, path, body string
		status          int
	}{
		{"rid-agent-0001", "/agents/nobody/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, http.StatusNotFound},
		{"rid-body-0002", "/agents/echo/mcp", `{"jsonrpc":"2.0","id":1`, http.StatusBadRequest},
		{"rid-large-0003", "/agents/echo/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 300) + `"}}`, http.StatusRequestEntityTooLarge},
	} {
		req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
		req.RemoteAddr, req.Host = "127.0.0.1:5000", "127.0.0.1:8200"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Request-Id", c.rid)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s: HTTP %d, want %d", c.path, rec.Code, c.status)
		}
		lines := logs.FilterField(zap.String("request_id", c.rid)).AllUntimed()
		if len(lines) != 1 || lines[0].Message != "request refused" || lines[0].ContextMap()["status"] != int64(c.status) {
			t.Errorf("%s: log lines with the request id: %v, want one \"request refused\" with status %d", c.rid, lines, c.status)
		}
	}
}
