package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	webToken = "web-ui-s3cret-token"
	opsToken = "ops-s3cret-token"
)

func opsDigest() string {
	d := sha256.Sum256([]byte(opsToken))
	return "sha256:" + hex.EncodeToString(d[:])
}

// seen is what the wrapped handler observed.
type seen struct {
	called bool
	id     Identity
	auth   string
}

func serveAuth(t *testing.T, a *Authenticator, agent, authz string) (*httptest.ResponseRecorder, seen, [2]any) {
	t.Helper()
	var s seen
	var denied [2]any
	h := a.Middleware(
		func(*http.Request) string { return agent },
		func(w http.ResponseWriter, _ *http.Request, status int, reason string) {
			denied = [2]any{status, reason}
			w.WriteHeader(status)
		},
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s = seen{called: true, id: IdentityFrom(r.Context()), auth: r.Header.Get("Authorization")}
	}))
	req := httptest.NewRequest(http.MethodPost, "/agents/"+agent+"/mcp", nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, s, denied
}

func TestAuthenticatorTokens(t *testing.T) {
	a, err := NewAuthenticator(ModeTokens, []TokenSpec{
		{Name: "web-ui", Token: webToken, Agents: []string{"research", "tech_*"}},
		{Name: "ops", Token: opsDigest()},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		agent      string
		authz      string
		status     int
		reason     string
		challenge  string
		wantCaller string
	}{
		{"no token", "research", "", 401, AuthMissingToken, `Bearer realm="pallasgw"`, ""},
		{"basic scheme", "research", "Basic " + webToken, 401, AuthMissingScheme, `Bearer realm="pallasgw"`, ""},
		{"bare token, no scheme", "research", webToken, 401, AuthMissingScheme, `Bearer realm="pallasgw"`, ""},
		{"empty bearer", "research", "Bearer ", 401, AuthMissingToken, `Bearer realm="pallasgw"`, ""},
		{"bearer alone", "research", "Bearer", 401, AuthMissingToken, `Bearer realm="pallasgw"`, ""},
		{"wrong token", "research", "Bearer nope", 401, AuthInvalidToken, `Bearer realm="pallasgw", error="invalid_token"`, ""},
		{"token prefix", "research", "Bearer " + webToken[:5], 401, AuthInvalidToken, `Bearer realm="pallasgw", error="invalid_token"`, ""},
		{"the stored hash is not a token", "research", "Bearer " + opsDigest(), 401, AuthInvalidToken, `Bearer realm="pallasgw", error="invalid_token"`, ""},
		{"right token, agent not allowed", "writer", "Bearer " + webToken, 403, AuthAgentNotAllowed, "", ""},
		{"right token", "research", "Bearer " + webToken, 200, "", "", "web-ui"},
		{"right token, glob agent, lower-case scheme", "tech_research", "bearer " + webToken, 200, "", "", "web-ui"},
		{"sha256 form, no agents means all", "writer", "Bearer " + opsToken, 200, "", "", "ops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, s, denied := serveAuth(t, a, tt.agent, tt.authz)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d", rec.Code, tt.status)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if tt.status != 200 {
				if s.called || denied != [2]any{tt.status, tt.reason} {
					t.Errorf("handler called %v, onDeny got %v; want onDeny(%d, %q)", s.called, denied, tt.status, tt.reason)
				}
				return
			}
			if !s.called || s.id.Caller != tt.wantCaller || !s.id.Authenticated || s.id.Claims != nil {
				t.Errorf("handler saw %+v, want caller %q", s, tt.wantCaller)
			}
			if s.auth != "" {
				t.Error("the gateway token was passed on to the handler")
			}
			if strings.Contains(rec.Body.String(), webToken) {
				t.Error("response body holds the token")
			}
		})
	}
}

func TestAuthenticatorPassthrough(t *testing.T) {
	a, err := NewAuthenticator("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode() != ModePassthrough {
		t.Errorf("Mode() = %q", a.Mode())
	}
	rec, s, _ := serveAuth(t, a, "anything", "Bearer caller-bearer")
	if rec.Code != 200 || !s.called || (s.id.Caller != "" || s.id.Authenticated || s.id.Claims != nil) || s.auth != "Bearer caller-bearer" {
		t.Errorf("passthrough: status %d, saw %+v; want 200, empty identity, bearer kept for forwarding", rec.Code, s)
	}
}

func TestNewAuthenticatorErrors(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		tokens []TokenSpec
		want   string
	}{
		{"unknown mode", "oauth", nil, `auth.mode: unknown mode "oauth"`},
		{"tokens mode without tokens", ModeTokens, nil, "needs at least one token"},
		{"missing name", ModeTokens, []TokenSpec{{Token: webToken}}, "auth.tokens[0]: name is required"},
		{"duplicate name", ModeTokens, []TokenSpec{{Name: "a", Token: webToken}, {Name: "a", Token: opsToken}}, "auth.tokens[1] (a): duplicate name"},
		{"empty token", ModeTokens, []TokenSpec{{Name: "a"}}, "auth.tokens[0] (a): token: empty"},
		{"bad sha256", ModeTokens, []TokenSpec{{Name: "a", Token: "sha256:" + webToken}}, "sha256: form needs 64 hex digits"},
		{"duplicate token", ModeTokens, []TokenSpec{{Name: "a", Token: opsToken}, {Name: "b", Token: opsDigest()}}, "auth.tokens[1] (b): token: same token as auth.tokens[0] (a)"},
		{"bad glob", ModeTokens, []TokenSpec{{Name: "a", Token: webToken, Agents: []string{"[x"}}}, `auth.tokens[0] (a): agents: invalid glob "[x"`},
		{"passthrough still checks tokens", ModePassthrough, []TokenSpec{{Name: "a"}}, "token: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAuthenticator(tt.mode, tt.tokens)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			for _, secret := range []string{webToken, opsToken, opsDigest()[7:]} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q reveals a token", err)
				}
			}
		})
	}
}

func TestAdminGuard(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		remote    string
		authz     string
		header    [2]string
		status    int
		challenge string
	}{
		{"token: none given", "admin-s3cret", "127.0.0.1:5000", "", [2]string{}, 401, `Bearer realm="pallasgw"`},
		{"token: wrong", "admin-s3cret", "127.0.0.1:5000", "Bearer nope", [2]string{}, 401, `Bearer realm="pallasgw", error="invalid_token"`},
		{"token: right, from anywhere", "admin-s3cret", "203.0.113.9:5000", "Bearer admin-s3cret", [2]string{}, 200, ""},
		{"no token: IPv4 loopback", "", "127.0.0.1:5000", "", [2]string{}, 200, ""},
		{"no token: other 127/8", "", "127.1.2.3:5000", "", [2]string{}, 200, ""},
		{"no token: IPv6 loopback", "", "[::1]:5000", "", [2]string{}, 200, ""},
		{"no token: IPv4-mapped loopback", "", "[::ffff:127.0.0.1]:5000", "", [2]string{}, 200, ""},
		{"no token: remote", "", "10.0.0.7:5000", "", [2]string{}, 403, ""},
		{"no token: remote IPv6", "", "[2001:db8::1]:5000", "", [2]string{}, 403, ""},
		{"no token: unparsable", "", "pipe", "", [2]string{}, 403, ""},
		{"no token: loopback relayed by a proxy", "", "127.0.0.1:5000", "", [2]string{"X-Forwarded-For", "203.0.113.9"}, 403, ""},
		{"no token: loopback with Forwarded", "", "127.0.0.1:5000", "", [2]string{"Forwarded", "for=203.0.113.9"}, 403, ""},
		{"no token: DNS rebinding (loopback peer, foreign Host)", "", "127.0.0.1:5000", "", [2]string{"Host", "evil.example.com:8200"}, 403, ""},
		{"no token: Host 127.0.0.1", "", "127.0.0.1:5000", "", [2]string{"Host", "127.0.0.1:8200"}, 200, ""},
		{"no token: Host [::1]", "", "[::1]:5000", "", [2]string{"Host", "[::1]:8200"}, 200, ""},
		{"no token: Host localhost without port", "", "127.0.0.1:5000", "", [2]string{"Host", "LOCALHOST"}, 200, ""},
		{"token: foreign Host is fine", "admin-s3cret", "127.0.0.1:5000", "Bearer admin-s3cret", [2]string{"Host", "gw.example.com"}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			h := AdminGuard(tt.token, nil)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
			req := httptest.NewRequest(http.MethodPost, "/-/reload", nil)
			req.RemoteAddr, req.Host = tt.remote, "localhost:8200"
			if tt.header[0] == "Host" {
				req.Host = tt.header[1]
			}
			if tt.authz != "" {
				req.Header.Set("Authorization", tt.authz)
			}
			if tt.header[0] != "" && tt.header[0] != "Host" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status || called != (tt.status == 200) {
				t.Errorf("status = %d (handler called %v), want %d", rec.Code, called, tt.status)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if tt.token != "" && strings.Contains(rec.Body.String(), tt.token) {
				t.Error("response body holds the admin token")
			}
		})
	}
}

// A static token's principal is never a JWT user's, whatever its name.
func TestPrincipalsDistinct(t *testing.T) {
	token := Identity{Caller: "jwt:alice", Authenticated: true}
	user := Identity{Caller: "alice", Authenticated: true, Claims: Claims{"sub": "alice"}}
	if token.Principal() == user.Principal() {
		t.Errorf("token %q and JWT user alice share the principal %q", token.Caller, token.Principal())
	}
	tk, _ := token.QuotaKey()
	uk, _ := user.QuotaKey()
	if tk == uk {
		t.Errorf("token %q and JWT user alice share the quota key %q", token.Caller, tk)
	}
	if (Identity{}).Principal() != "" {
		t.Errorf("an anonymous caller has a principal")
	}
}
