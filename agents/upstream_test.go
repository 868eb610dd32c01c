package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

type fakeUpstream map[string]string // principal -> Authorization

func (f fakeUpstream) Rejected(context.Context, string, string) {}

func (f fakeUpstream) WaitConnected(context.Context, string, string) bool { return false }

func (f fakeUpstream) Authorization(_ context.Context, server, principal string) (string, error) {
	if a, ok := f[principal]; ok {
		return a, nil
	}
	return "", &ConnectRequired{Server: server, URL: "https://gw.example/connect/abc", ID: "e1", Reason: "not connected yet"}
}

// TestUpstreamAuthorization: what a caller without a connection gets, per
// protocol, and that the principal is the authenticated caller's.
func TestUpstreamAuthorization(t *testing.T) {
	s := &Set{deps: Deps{Upstream: fakeUpstream{"token:alice": "Bearer A"}}}
	alice := policy.WithIdentity(context.Background(), policy.Identity{Caller: "alice", Authenticated: true})
	bob := policy.WithIdentity(context.Background(), policy.Identity{Caller: "bob", Authenticated: true})
	version := func(v string) http.Header {
		h := http.Header{}
		if v != "" {
			h.Set(mcp.HeaderProtocolVersion, v)
		}
		return h
	}
	if a, err := s.upstreamAuthorization(alice, "gh", version("2025-11-25"), nil); err != nil || a != "Bearer A" {
		t.Fatalf("alice: %q %v", a, err)
	}
	for _, tc := range []struct {
		version string
		rpc     bool // answered as -32042
	}{{"2025-11-25", true}, {"2025-06-18", false}, {"", false}} {
		t.Run("bob "+tc.version, func(t *testing.T) {
			_, err := s.upstreamAuthorization(bob, "gh", version(tc.version), nil)
			var cr *ConnectRequired
			if !errors.As(err, &cr) || !strings.Contains(err.Error(), "https://gw.example/connect/abc") {
				t.Fatalf("want a ConnectRequired naming the URL, got %v", err)
			}
			var required mcp.URLElicitationRequiredError
			if got := errors.As(err, &required); got != tc.rpc {
				t.Fatalf("URLElicitationRequiredError: %v, want %v", got, tc.rpc)
			}
			if tc.rpc {
				e := required.Elicitations
				if len(e) != 1 || e[0].Mode != mcp.ElicitationModeURL || e[0].URL != "https://gw.example/connect/abc" || e[0].ElicitationID != "e1" {
					t.Fatalf("elicitation: %+v", e)
				}
			}
		})
	}
	t.Run("2026-07-28 without elicitation.url: -32021 naming it", func(t *testing.T) {
		ctx := server.WithRequestProtocolInfo(bob, &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
			ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}}})
		_, err := s.upstreamAuthorization(ctx, "gh", version("2026-07-28"), nil)
		var rpc *wire.RPCError
		if !errors.As(err, &rpc) || rpc.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY || !strings.Contains(string(rpc.Data), `"elicitation":{"url":{}}`) ||
			!strings.Contains(rpc.Message, "https://gw.example/connect/abc") {
			t.Fatalf("got %v (%+v)", err, rpc)
		}
		if !strings.Contains(err.Error(), "https://gw.example/connect/abc") {
			t.Fatalf("text without the URL: %v", err)
		}
		var required mcp.URLElicitationRequiredError
		if errors.As(err, &required) {
			t.Fatal("-32042 for a 2026-07-28 caller")
		}
	})
	t.Run("2026-07-28 with elicitation.url and no relay to ask by: the URL in words", func(t *testing.T) {
		ctx := server.WithRequestProtocolInfo(bob, &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
			ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}})
		_, err := s.upstreamAuthorization(ctx, "gh", version("2026-07-28"), nil)
		var rpc *wire.RPCError
		var cr *ConnectRequired
		if errors.As(err, &rpc) || !errors.As(err, &cr) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("anonymous callers cannot connect", func(t *testing.T) {
		_, err := s.upstreamAuthorization(context.Background(), "gh", version("2025-11-25"), nil)
		var cr *ConnectRequired
		if !errors.As(err, &cr) || cr.URL != "" {
			t.Fatalf("anonymous: %v", err)
		}
		var required mcp.URLElicitationRequiredError
		if errors.As(err, &required) {
			t.Fatal("an anonymous caller was sent to connect")
		}
	})
}

// connectsAfter is an upstream whose caller is connected once asked has
// reached n (the person completes the connection meanwhile).
type connectsAfter struct {
	asked *int
	n     int
}

func (c connectsAfter) Rejected(context.Context, string, string)           {}
func (c connectsAfter) WaitConnected(context.Context, string, string) bool { return false }
func (c connectsAfter) Authorization(_ context.Context, server, _ string) (string, error) {
	if *c.asked >= c.n {
		return "Bearer B", nil
	}
	return "", &ConnectRequired{Server: server, URL: "https://gw.example/connect/abc", ID: "e1", Reason: "not connected yet"}
}

// A 2026-07-28 caller with elicitation.url gets an input-required round
// carrying the URL elicitation (here: the relay's request); a retry that
// accepts it before the connection completes gets the same round again,
// and the call goes on once it has.
func TestUpstreamConnectRounds(t *testing.T) {
	bob := policy.WithIdentity(context.Background(), policy.Identity{Caller: "bob", Authenticated: true})
	ctx := server.WithRequestProtocolInfo(bob, &server.RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28",
		ClientCapabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}})
	hdr := http.Header{mcp.HeaderProtocolVersion: {"2026-07-28"}}
	for _, tc := range []struct {
		name, action string
		want         string // the Authorization, or a part of the error
	}{
		{"accepted, connected after the third round", "accept", "Bearer B"},
		{"declined", "decline", "was not accepted (decline)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked int
			var rounds []string
			relay := &mcpclient.Relay{Request: func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				asked++
				rounds = append(rounds, method+" "+string(params))
				return json.RawMessage(`{"action":"` + tc.action + `"}`), nil
			}}
			s := &Set{deps: Deps{Upstream: connectsAfter{asked: &asked, n: 3}}}
			auth, err := s.upstreamAuthorization(ctx, "gh", hdr, relay)
			if got := auth + fmt.Sprint(err); !strings.Contains(got, tc.want) {
				t.Fatalf("got %q %v, want %q", auth, err, tc.want)
			}
			if tc.action == "decline" && len(rounds) != 1 {
				t.Fatalf("declined, yet asked %d times", len(rounds))
			}
			for _, r := range rounds {
				if r != rounds[0] || !strings.Contains(r, `"mode":"url"`) || !strings.Contains(r, "https://gw.example/connect/abc") {
					t.Fatalf("rounds differ or carry no URL elicitation: %q", rounds)
				}
			}
			if tc.action == "accept" && len(rounds) != 3 {
				t.Fatalf("asked %d rounds, want 3 (two retries before the connection)", len(rounds))
			}
		})
	}
}
