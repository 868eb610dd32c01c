package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// authServer is a stateful Streamable HTTP downstream whose tool "sid"
// answers the id of its session and the Authorization the call came with,
// and that records the Authorization of every request per session and
// counts initializes per Authorization.
type authServer struct {
	ts *httptest.Server

	mu          sync.Mutex
	bySession   map[string][]string // session id → Authorization of each of its requests
	initializes map[string]int      // Authorization → initialize requests
}

func newAuthServer(t *testing.T) *authServer {
	s := server.NewMCPServer("auth", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("sid"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h, _ := ctx.Value(headerKey{}).(http.Header)
		return mcp.NewToolResultText(server.ClientSessionFromContext(ctx).SessionID() + " " + h.Get("Authorization")), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return context.WithValue(ctx, headerKey{}, r.Header.Clone())
		}))
	d := &authServer{bySession: map[string][]string{}, initializes: map[string]int{}}
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		auth := r.Header.Get("Authorization")
		d.mu.Lock()
		if msg.Method == string(mcp.MethodInitialize) {
			d.initializes[auth]++
		}
		if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" {
			d.bySession[sid] = append(d.bySession[sid], auth)
		}
		d.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *authServer) initialized(auth string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.initializes[auth]
}

// authsOf is the Authorization of each request the downstream saw on sid.
func (d *authServer) authsOf(sid string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.bySession[sid]...)
}

// sidAuth calls "sid" as principal with Authorization auth, and returns
// the downstream session and the Authorization its handler saw.
func sidAuth(t *testing.T, m *Manager, principal, auth string, raw bool) (sid, seen string) {
	t.Helper()
	ctx, h := as(t, principal), hdr("Authorization", auth, "X-Tenant", "acme")
	var out string
	if raw {
		res, err := m.CallToolRaw(ctx, "auth", "sid", nil, h, nil, CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(res.JSON, &r); err != nil || len(r.Content) != 1 {
			t.Fatalf("raw result %s: %v", res.JSON, err)
		}
		out = r.Content[0].Text
	} else {
		res, err := m.CallTool(ctx, "auth", "sid", nil, h, nil, CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = text(t, res)
	}
	sid, seen, _ = strings.Cut(out, " ")
	return sid, seen
}

// On a server whose Authorization is the caller's own (upstream OAuth), a
// renewed token goes on with the principal's downstream session: the
// downstream sees one initialize per principal, the same Mcp-Session-Id
// before and after the renewal, and the new token on every request after
// it. Two principals never share a session, and no request on one's
// session carries the other's token; the tool list is read on the
// principal's session too.
func TestCallerAuthSessionOutlivesRenewal(t *testing.T) {
	for _, scope := range []string{ScopeCaller, ScopeShared} {
		for _, raw := range []bool{false, true} {
			t.Run(scope+"/raw="+strconv.FormatBool(raw), func(t *testing.T) {
				d := newAuthServer(t)
				spec := ServerSpec{Name: "auth", Transport: TransportHTTP, URL: d.ts.URL + "/mcp", Scope: scope, CallerAuth: true}
				m := newManager(t, Options{CallerOf: testCallerOf, PrincipalOf: testCallerOf}, spec)

				alice, seen := sidAuth(t, m, "alice", "Bearer a1", raw)
				if alice == "" || seen != "Bearer a1" {
					t.Fatalf("alice's first call on session %q with %q, want a session and Bearer a1", alice, seen)
				}
				if _, err := m.Tools(as(t, "alice"), "auth", hdr("Authorization", "Bearer a1", "X-Tenant", "acme")); err != nil {
					t.Fatal(err)
				}
				renewed, seen := sidAuth(t, m, "alice", "Bearer a2", raw) // the token was renewed
				if renewed != alice || seen != "Bearer a2" {
					t.Errorf("after renewal alice calls on session %q with %q; before, on %q: want the same session with Bearer a2", renewed, seen, alice)
				}
				bob, seen := sidAuth(t, m, "bob", "Bearer b1", raw)
				if bob == "" || bob == alice || seen != "Bearer b1" {
					t.Errorf("bob calls on session %q with %q, alice on %q: want a session of his own with Bearer b1", bob, seen, alice)
				}
				if again, seen := sidAuth(t, m, "alice", "Bearer a2", raw); again != alice || seen != "Bearer a2" {
					t.Errorf("alice's next call on %q with %q, want %q with Bearer a2", again, seen, alice)
				}
				if n := d.initialized("Bearer a1") + d.initialized("Bearer a2"); n != 1 {
					t.Errorf("%d initializes for alice, want 1 (the renewal opens no session)", n)
				}
				if n := d.initialized("Bearer b1"); n != 1 {
					t.Errorf("%d initializes for bob, want 1", n)
				}
				for _, a := range d.authsOf(alice) {
					if a != "Bearer a1" && a != "Bearer a2" {
						t.Errorf("a request on alice's session carried %q", a)
					}
				}
				for _, a := range d.authsOf(bob) {
					if a != "Bearer b1" {
						t.Errorf("a request on bob's session carried %q", a)
					}
				}
				if n := m.servers["auth"].sessionCount(); n != 2 {
					t.Errorf("%d pooled sessions, want 2 (one per principal)", n)
				}
			})
		}
	}
}

// Without a principal, a CallerAuth server's Authorization stays in the
// header set: two tokens, two sessions.
func TestCallerAuthWithoutPrincipalKeysByToken(t *testing.T) {
	d := newAuthServer(t)
	spec := ServerSpec{Name: "auth", Transport: TransportHTTP, URL: d.ts.URL + "/mcp", Scope: ScopeCaller, CallerAuth: true}
	m := newManager(t, Options{CallerOf: testCallerOf, PrincipalOf: testCallerOf}, spec)
	one, seen1 := sidAuth(t, m, "", "Bearer x1", false)
	two, seen2 := sidAuth(t, m, "", "Bearer x2", false)
	if one == two || seen1 != "Bearer x1" || seen2 != "Bearer x2" {
		t.Errorf("sessions %q (%q) and %q (%q): want two, each with its own token", one, seen1, two, seen2)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A call's requests carry the token the call was given, not the one an
// older call of the principal set on the shared session after it (a call
// that started before a renewal and acquired the session later): a call
// that starts after a renewal never sends the replaced token. The
// session's own requests carry its latest.
func TestCallerAuthRequestsCarryTheirCallsToken(t *testing.T) {
	var sent string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusAccepted, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	s := &session{}
	s.setAuth("Bearer replaced") // set by the older call, last
	rt := &headerRoundTripper{base: base, auth: &s.auth}
	renewed := withOp(context.Background(), "tools/call", "Bearer renewed", keepRelay)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"the renewed call's request", renewed, "Bearer renewed"},
		{"the session's own request", context.Background(), "Bearer replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodPost, "http://127.0.0.1:1/mcp", nil)
			if _, err := rt.RoundTrip(req); err != nil || sent != tc.want {
				t.Errorf("sent %q (%v), want %q", sent, err, tc.want)
			}
			if got := s.callHeader(tc.ctx).Get("Authorization"); got != tc.want {
				t.Errorf("a raw call's headers carry %q, want %q", got, tc.want)
			}
		})
	}
}
