package config

import (
	"strings"
	"testing"
	"time"
)

func TestOAuthConfig(t *testing.T) {
	const key = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=" // 32 bytes
	base := `name: t
reload: {poll_interval: 0}
public_url: https://gw.example.com
auth: {mode: tokens, tokens: [{name: alice, token: aaaaaaaaaaaaaaaaaaaa}]}
mcp:
  servers:
    gh: {url: "https://mcp.example.com/mcp", oauth: {scopes: [repo]}}
`
	for _, tc := range []struct {
		name, extra string
		want        string // "" = loads
		warn        string
	}{
		{name: "memory store, no key: a random key, no warning"},
		{name: "memory store, key", extra: "credentials: {key: " + key + ", previous_keys: [" + key + "]}\n"},
		{name: "shared store needs a key", extra: "sessions: {store: \"redis://127.0.0.1:1/0\"}\n", want: "credentials.key: is required with mcp.servers.*.oauth and a shared sessions.store"},
		{name: "shared store with key", extra: "sessions: {store: \"redis://127.0.0.1:1/0\"}\ncredentials: {key: " + key + "}\n"},
		{name: "bad previous key", extra: "credentials: {key: " + key + ", previous_keys: [abc]}\n", want: "credentials.previous_keys.0: must be 32 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(base+tc.extra))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := c.MCP.Servers["gh"].OAuth
			if o.ConnectWait != 2*time.Minute || c.MCP.Servers["gh"].SessionScope != "caller" {
				t.Errorf("defaults: connect_wait %v, session_scope %s", o.ConnectWait, c.MCP.Servers["gh"].SessionScope)
			}
			if w := strings.Join(c.Warnings, "\n"); !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q, want %q", w, tc.warn)
			}
			if tc.warn == "" && len(c.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", c.Warnings)
			}
		})
	}
	t.Run("passthrough mode is refused", func(t *testing.T) {
		_, err := Parse("t.yaml", []byte(strings.Replace(base, "auth: {mode: tokens, tokens: [{name: alice, token: aaaaaaaaaaaaaaaaaaaa}]}", "", 1)))
		if err == nil || !strings.Contains(err.Error(), "needs auth.mode tokens or jwt") {
			t.Fatalf("error %v", err)
		}
	})
}
