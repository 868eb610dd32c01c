package config

import (
	"os"
	"path/filepath"
	"testing"
)

// session_scope defaults to caller for http and sse servers and to shared
// for stdio ones (one process is one session); max_sessions to 64.
func TestSessionScopeDefaults(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pallasgw.yaml")
	raw := "name: t\nmcp:\n  servers:\n" +
		"    web: {url: 'http://127.0.0.1:1/mcp'}\n" +
		"    old: {transport: sse, url: 'http://127.0.0.1:1/sse'}\n" +
		"    cli: {command: srv}\n" +
		"    own: {command: srv, session_scope: caller, max_sessions: 4}\n" +
		"    each: {url: 'http://127.0.0.1:1/mcp', session_scope: call}\n"
	if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		scope string
		max   int
	}{"web": {"caller", DefaultMaxSessions}, "old": {"caller", DefaultMaxSessions}, "cli": {"shared", DefaultMaxSessions},
		"own": {"caller", 4}, "each": {"call", DefaultMaxSessions}}
	for name, w := range want {
		s := c.MCP.Servers[name]
		if s.SessionScope != w.scope || s.MaxSessions != w.max {
			t.Errorf("%s: session_scope %q, max_sessions %d; want %q, %d", name, s.SessionScope, s.MaxSessions, w.scope, w.max)
		}
	}
}
