package sessions

import (
	"context"
	"testing"

	"github.com/pallasgw/pallasgw/policy"
)

func TestCallerOrder(t *testing.T) {
	bg := context.Background()
	token := policy.WithIdentity(bg, policy.Identity{Caller: "alice", Authenticated: true})
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"nobody", bg, Anonymous},
		{"inbound session", WithInbound(bg, "s1"), "session:s1"},
		{"agent_id beats the session", WithAgentID(WithInbound(bg, "s1"), "bot"), "agent:bot"},
		{"principal beats both", WithAgentID(WithInbound(token, "s1"), "bot"), "token:alice"},
		{"empty values are none", WithAgentID(WithInbound(bg, ""), ""), Anonymous},
		{"an agent_id is not a token", WithAgentID(bg, "token:alice"), "agent:token:alice"},
	}
	for _, c := range cases {
		if got := Caller(c.ctx); got != c.want {
			t.Errorf("%s: Caller = %q, want %q", c.name, got, c.want)
		}
	}
}
