package upstreamauth

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/test/gwtest"
)

// TestReloadPurgesTokens: a reload that removes a server, takes its oauth
// away or changes its authorization server deletes that server's sealed
// tokens from the store (memory and Redis), every principal's, and no
// other server's; a reload that changes nothing of the kind keeps them.
func TestReloadPurgesTokens(t *testing.T) {
	stores := map[string]func(t *testing.T) KV{
		"memory": func(*testing.T) KV { return nil },
		"redis": func(t *testing.T) KV {
			st, err := sessions.NewRedis(gwtest.StartRedis(t).URL(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			load := func(servers string) *config.Config {
				cfg, err := config.Parse("t.yaml", []byte(`name: t
reload: {poll_interval: 0}
public_url: http://127.0.0.1:1
auth: {mode: tokens, tokens: [{name: alice, token: `+aliceToken+`}, {name: bob, token: `+bobToken+`}]}
mcp:
  servers:
`+servers))
				if err != nil {
					t.Fatal(err)
				}
				return cfg
			}
			const (
				gh      = `    gh: {url: "http://127.0.0.1:1/gh", oauth: {}}` + "\n"
				gl      = `    gl: {url: "http://127.0.0.1:1/gl", oauth: {authorization_server: "http://127.0.0.1:1/as"}}` + "\n"
				glMoved = `    gl: {url: "http://127.0.0.1:1/gl", oauth: {authorization_server: "http://127.0.0.1:1/other"}}` + "\n"
				ghPlain = `    gh: {url: "http://127.0.0.1:1/gh"}` + "\n"
			)
			m, err := New(load(gh+gl), nil, Options{KV: store(t), Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			entries := [][2]string{{"token:alice", "gh"}, {"token:bob", "gh"}, {"token:alice", "gl"}}
			for _, e := range entries {
				if err := m.vault.put(ctx, e[0], e[1], "http://127.0.0.1:1/as", &Token{Access: "access-" + e[0] + e[1]}); err != nil {
					t.Fatal(err)
				}
			}
			stored := func(principal, server string) bool {
				t.Helper()
				raw, err := m.kv.Get(ctx, storeKey(entryKey(principal, server)))
				if err != nil {
					t.Fatal(err)
				}
				return len(raw) > 0
			}
			want := func(step string, gh, gl bool) {
				t.Helper()
				m.bg.Wait() // the purges Update started
				for _, e := range entries {
					if got, w := stored(e[0], e[1]), map[string]bool{"gh": gh, "gl": gl}[e[1]]; got != w {
						t.Errorf("%s: %s's token for %s stored %v, want %v", step, e[0], e[1], got, w)
					}
				}
			}
			want("start", true, true)
			m.Update(load(gh+gl), nil)
			want("an unchanged reload", true, true)
			m.Update(load(ghPlain+gl), nil)
			want("gh's oauth removed", false, true)
			if members, err := m.kv.IndexMembers(ctx, indexKey("gh")); err != nil || len(members) != 0 {
				t.Errorf("gh's index after the purge: %v %v, want none", members, err)
			}
			m.Update(load(gl), nil)
			want("gh removed", false, true)
			m.Update(load(glMoved), nil)
			want("gl's authorization server changed", false, false)
		})
	}
}
