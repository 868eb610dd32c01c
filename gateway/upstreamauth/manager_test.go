package upstreamauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
)

type rig struct {
	as      *fakeAS
	m       *Manager
	gw      *httptest.Server
	metrics *metrics.Metrics
	logs    *observer.ObservedLogs
}

func newRig(t testing.TB) *rig { return newRigMode(t, "tokens") }

// newRigMode is a Manager in auth mode tokens (callers alice and bob by
// token) or jwt (the fake authorization server is also the gateway's
// issuer, where people sign in).
func newRigMode(t testing.TB, mode string) *rig {
	as := newFakeAS(t)
	res := fakeResource(t, as)
	var h http.Handler
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(gw.Close)
	authCfg := `auth: {mode: tokens, tokens: [{name: alice, token: ` + aliceToken + `}, {name: bob, token: ` + bobToken + `}]}`
	if mode == "jwt" {
		authCfg = `auth: {mode: jwt, jwt: {issuer: "` + as.srv.URL + `"}}`
	}
	cfg, err := config.Parse("t.yaml", []byte(`name: t
reload: {poll_interval: 0}
public_url: `+gw.URL+`
`+authCfg+`
mcp:
  servers:
    gh: {url: "`+res.URL+`/mcp", oauth: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var auth *policy.Authenticator
	if mode == "tokens" {
		if auth, err = policy.NewAuthenticator("tokens", []policy.TokenSpec{{Name: "alice", Token: aliceToken}, {Name: "bob", Token: bobToken}}); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zap.DebugLevel)
	mt := metrics.New("test")
	m, err := New(cfg, auth, Options{Logger: zap.New(core), Metrics: mt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	h = m.Handler()
	return &rig{as: as, m: m, gw: gw, metrics: mt, logs: logs}
}

// browser is a person's browser, signed in at the authorization server
// as subject.
func (r *rig) browser(t testing.TB, subject string) *http.Client {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(r.as.srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "as", Value: subject}})
	return &http.Client{Jar: jar}
}

func connectURL(t testing.TB, err error) string {
	t.Helper()
	var cr *agents.ConnectRequired
	if !errors.As(err, &cr) || cr.URL == "" {
		t.Fatalf("want ConnectRequired with a URL, got %v", err)
	}
	return cr.URL
}

func get(t testing.TB, c *http.Client, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestConnectFlow(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()

	_, err := r.m.Authorization(ctx, "gh", "token:alice")
	aliceLink := connectURL(t, err)
	if !strings.HasPrefix(aliceLink, r.gw.URL+"/connect/") {
		t.Fatalf("link %s is not the gateway's", aliceLink)
	}
	if _, err2 := r.m.Authorization(ctx, "gh", "token:alice"); connectURL(t, err2) != aliceLink {
		t.Fatal("a second call got another link")
	}
	_, err = r.m.Authorization(ctx, "gh", "token:bob")
	bobLink := connectURL(t, err)

	t.Run("bob's link opened as alice connects nothing", func(t *testing.T) {
		code, body := get(t, r.browser(t, "alice"), bobLink, aliceToken)
		if code != http.StatusForbidden || !strings.Contains(body, "Nothing was connected") {
			t.Fatalf("%d %s", code, body)
		}
		if _, err := r.m.Authorization(ctx, "gh", "token:bob"); connectURL(t, err) == "" {
			t.Fatal("bob connected")
		}
	})

	t.Run("a link without proof asks to sign in", func(t *testing.T) {
		code, body := get(t, r.browser(t, "alice"), aliceLink, "")
		if code != http.StatusOK || !strings.Contains(body, `action="/connect/signin"`) {
			t.Fatalf("%d %s", code, body)
		}
	})

	t.Run("a sign-in posted from another site is refused", func(t *testing.T) {
		// Another site's form: no CSRF cookie (SameSite=Strict) to match.
		resp, err := r.browser(t, "alice").PostForm(r.gw.URL+"/connect/signin", url.Values{"token": {aliceToken}, "next": {"/connect/"}, "csrf": {"guess"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("sign-in without the CSRF cookie: %d", resp.StatusCode)
		}
		for _, c := range resp.Cookies() {
			if c.Name == whoCookie && c.Value != "" {
				t.Fatal("signed in")
			}
		}
	})

	t.Run("the callback in another browser connects nothing; the one that started the flow connects", func(t *testing.T) {
		alice := r.browser(t, "alice")
		var callback string
		alice.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
			if req.URL.Path == callbackPath {
				callback = req.URL.String()
				return http.ErrUseLastResponse
			}
			return nil
		}
		if code, body := get(t, alice, aliceLink, aliceToken); code != http.StatusFound || callback == "" {
			t.Fatalf("%d %s", code, body)
		}
		if code, body := get(t, r.browser(t, "mallory"), callback, ""); code != http.StatusForbidden {
			t.Fatalf("callback without the flow cookie: %d %s", code, body)
		}
		if _, err := r.m.Authorization(ctx, "gh", "token:alice"); err == nil {
			t.Fatal("connected through another browser")
		}
		if code, body := get(t, alice, aliceLink, aliceToken); code != http.StatusGone {
			t.Fatalf("a used link: %d %s", code, body)
		}
		alice.CheckRedirect = nil
		if code, body := get(t, alice, callback, ""); code != http.StatusOK || !strings.Contains(body, "Connected to gh") {
			t.Fatalf("%d %s", code, body)
		}
		if code, body := get(t, alice, callback, ""); code != http.StatusBadRequest {
			t.Fatalf("a spent flow: %d %s", code, body)
		}
		auth, err := r.m.Authorization(ctx, "gh", "token:alice")
		if err != nil || subjectOf(auth) != "alice" {
			t.Fatalf("alice's Authorization: %q %v", subjectOf(auth), err)
		}
		if _, err := r.m.Authorization(ctx, "gh", "token:bob"); connectURL(t, err) == "" {
			t.Fatal("bob got a token")
		}
		if v := testutil.ToFloat64(r.metrics.UpstreamConnections.WithLabelValues("gh", "connected")); v != 1 {
			t.Errorf("pallasgw_upstream_connections{connected} = %v", v)
		}
		if c := r.m.Counts(); len(c) != 1 || c["gh"]["connected"] != 1 || len(c["gh"]) != 1 {
			t.Errorf("counts %v", c)
		}
	})

	t.Run("refresh before expiry, single-flight", func(t *testing.T) {
		_, err := r.m.Authorization(ctx, "gh", "token:bob")
		if code, body := get(t, r.browser(t, "bob"), connectURL(t, err), bobToken); code != http.StatusOK {
			t.Fatalf("bob connects: %d %s", code, body)
		}
		// An hour later: bob's token expires in 10 s, within the margin.
		tok, err := r.m.vault.get(ctx, "token:bob", "gh", r.as.srv.URL)
		if err != nil || tok == nil {
			t.Fatalf("bob's token: %v", err)
		}
		aged := *tok
		aged.Issued, aged.Expiry = timeNow().Add(-time.Hour), timeNow().Add(10*time.Second)
		if err := r.m.vault.put(ctx, "token:bob", "gh", r.as.srv.URL, &aged); err != nil {
			t.Fatal(err)
		}
		r.as.mu.Lock()
		before := r.as.refreshN
		r.as.mu.Unlock()
		var wg sync.WaitGroup
		auths := make([]string, 8)
		for i := range auths {
			wg.Go(func() {
				a, err := r.m.Authorization(ctx, "gh", "token:bob")
				if err != nil {
					t.Error(err)
				}
				auths[i] = a
			})
		}
		wg.Wait()
		r.as.mu.Lock()
		n := r.as.refreshN - before
		r.as.mu.Unlock()
		if n != 1 {
			t.Fatalf("%d refreshes for 8 concurrent calls, want 1", n)
		}
		for _, a := range auths {
			if a != auths[0] || subjectOf(a) != "bob" || a == "Bearer "+tok.Access {
				t.Fatalf("calls got different tokens: %v", auths)
			}
		}
	})

	t.Run("an unreachable authorization server keeps the connection", func(t *testing.T) {
		tok, _ := r.m.vault.get(ctx, "token:bob", "gh", r.as.srv.URL)
		aged := *tok
		aged.Issued, aged.Expiry = timeNow().Add(-time.Hour), timeNow().Add(10*time.Second)
		if err := r.m.vault.put(ctx, "token:bob", "gh", r.as.srv.URL, &aged); err != nil {
			t.Fatal(err)
		}
		r.as.mu.Lock()
		r.as.down = true
		r.as.mu.Unlock()
		_, err := r.m.Authorization(ctx, "gh", "token:bob")
		var cr *agents.ConnectRequired
		if err == nil || errors.As(err, &cr) || !strings.Contains(err.Error(), "cannot be reached") {
			t.Fatalf("with the authorization server down: %v", err)
		}
		r.as.mu.Lock()
		r.as.down = false
		r.as.mu.Unlock()
		a, err := r.m.Authorization(ctx, "gh", "token:bob")
		if err != nil || subjectOf(a) != "bob" || a == "Bearer "+aged.Access {
			t.Fatalf("the next call once it is back: %q %v", a, err)
		}
	})

	t.Run("a refresh that fails asks to connect again", func(t *testing.T) {
		// bob's connection as it would be after the authorization server
		// revoked his refresh token: expired, its refresh token unknown.
		if err := r.m.vault.put(ctx, "token:bob", "gh", r.as.srv.URL, &Token{Access: "at-bob.x", Refresh: "rt-unknown", Expiry: timeNow().Add(-1)}); err != nil {
			t.Fatal(err)
		}
		_, err := r.m.Authorization(ctx, "gh", "token:bob")
		var cr *agents.ConnectRequired
		if !errors.As(err, &cr) || !strings.Contains(cr.Reason, "could not be renewed") {
			t.Fatalf("want a connect request after a failed refresh, got %v", err)
		}
		if v := testutil.ToFloat64(r.metrics.UpstreamRefreshes.WithLabelValues("gh", "error")); v != 2 {
			t.Errorf("refresh errors counted %v", v)
		}
		if v := testutil.ToFloat64(r.metrics.UpstreamConnections.WithLabelValues("gh", "failed")); v != 1 {
			t.Errorf("pallasgw_upstream_connections{failed} = %v", v)
		}
	})

	t.Run("list and revoke", func(t *testing.T) {
		c := &http.Client{}
		req, _ := http.NewRequest(http.MethodGet, r.gw.URL+"/connect/", nil)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"server":"gh","state":"connected"`) || !strings.Contains(string(b), `"principal":"token:alice"`) {
			t.Fatalf("list: %s", b)
		}
		req, _ = http.NewRequest(http.MethodPost, r.gw.URL+"/connect/revoke", strings.NewReader("server=gh"))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err = c.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %v %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		if _, err := r.m.Authorization(ctx, "gh", "token:alice"); connectURL(t, err) == "" {
			t.Fatal("alice still connected after revoking")
		}
	})

	t.Run("no issued token in any log line", func(t *testing.T) {
		var all strings.Builder
		for _, e := range r.logs.All() {
			all.WriteString(e.Message)
			for k, v := range e.ContextMap() {
				all.WriteString(" " + k + "=" + toString(v))
			}
			all.WriteString("\n")
		}
		for _, tok := range r.as.tokens() {
			if strings.Contains(all.String(), tok) {
				t.Fatalf("token %s… in the logs", tok[:6])
			}
		}
		if !strings.Contains(all.String(), "upstream connect refused") || !strings.Contains(all.String(), "upstream connected") ||
			!strings.Contains(all.String(), "upstream connection revoked") || !strings.Contains(all.String(), "upstream token refresh failed") {
			t.Fatalf("audit lines missing:\n%s", all.String())
		}
	})
}

func toString(v any) string { return strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\n", " ")) }

// TestConnectJWTLogin: in auth mode jwt a browser proves who it is by an
// OpenID login at the gateway's issuer; bob's link opened by a browser
// signed in as alice connects nothing, alice's connects her.
func TestConnectJWTLogin(t *testing.T) {
	r := newRigMode(t, "jwt")
	ctx := context.Background()
	_, err := r.m.Authorization(ctx, "gh", "jwt:bob")
	bobLink := connectURL(t, err)
	_, err = r.m.Authorization(ctx, "gh", "jwt:alice")
	aliceLink := connectURL(t, err)

	alice := r.browser(t, "alice") // signed in at the identity provider as alice
	code, body := get(t, alice, bobLink, "")
	if code != http.StatusForbidden || !strings.Contains(body, "Nothing was connected") {
		t.Fatalf("bob's link in alice's browser: %d %s", code, body)
	}
	if _, err := r.m.Authorization(ctx, "gh", "jwt:bob"); connectURL(t, err) == "" {
		t.Fatal("bob connected")
	}
	if code, body = get(t, alice, aliceLink, ""); code != http.StatusOK || !strings.Contains(body, "Connected to gh") {
		t.Fatalf("alice's link: %d %s", code, body)
	}
	auth, err := r.m.Authorization(ctx, "gh", "jwt:alice")
	if err != nil || subjectOf(auth) != "alice" {
		t.Fatalf("alice: %q %v", auth, err)
	}
	if _, err := r.m.Authorization(ctx, "gh", "token:alice"); connectURL(t, err) == "" {
		t.Fatal("the token caller alice got the JWT user alice's connection")
	}
}

// TestReloadDropsTokens: a reload that changes a server's authorization
// server makes its tokens unreadable (the issuer is sealed into each); one
// that removes the server stops serving them.
func TestReloadDropsTokens(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.m.Authorization(ctx, "gh", "token:alice")
	if code, body := get(t, r.browser(t, "alice"), connectURL(t, err), aliceToken); code != http.StatusOK {
		t.Fatalf("connect: %d %s", code, body)
	}
	if _, err := r.m.Authorization(ctx, "gh", "token:alice"); err != nil {
		t.Fatal(err)
	}
	other := newFakeAS(t)
	load := func(servers string) *config.Config {
		cfg, err := config.Parse("t.yaml", []byte(`name: t
reload: {poll_interval: 0}
public_url: `+r.gw.URL+`
auth: {mode: tokens, tokens: [{name: alice, token: `+aliceToken+`}]}
mcp:
  servers:
`+servers))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	url := r.m.cfg.Load().servers["gh"].URL
	r.m.Update(load(`    gh: {url: "`+url+`", oauth: {authorization_server: "`+other.srv.URL+`"}}
`), nil)
	if _, err := r.m.Authorization(ctx, "gh", "token:alice"); connectURL(t, err) == "" {
		t.Fatal("a token of the old authorization server was served")
	}
	r.m.Update(load(`    other: {url: "`+url+`", oauth: {}}
`), nil)
	if a, err := r.m.Authorization(ctx, "gh", "token:alice"); err == nil || a != "" {
		t.Fatalf("a removed server's token was served: %v", err)
	}
}

// TestRejectedRenews: a downstream 401 makes the next call renew the
// caller's token first; the renewed token serves the calls after it.
func TestRejectedRenews(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.m.Authorization(ctx, "gh", "token:alice")
	if code, body := get(t, r.browser(t, "alice"), connectURL(t, err), aliceToken); code != http.StatusOK {
		t.Fatalf("connect: %d %s", code, body)
	}
	first, err := r.m.Authorization(ctx, "gh", "token:alice")
	if err != nil {
		t.Fatal(err)
	}
	r.m.Rejected(ctx, "gh", "token:bob") // nobody's connection: nothing happens
	r.m.Rejected(ctx, "gh", "token:alice")
	second, err := r.m.Authorization(ctx, "gh", "token:alice")
	if err != nil || second == first || subjectOf(second) != "alice" {
		t.Fatalf("after a 401: %q (was %q) %v", second, first, err)
	}
	r.as.mu.Lock()
	n := r.as.refreshN
	r.as.mu.Unlock()
	if third, _ := r.m.Authorization(ctx, "gh", "token:alice"); third != second {
		t.Fatal("the renewed token was not kept")
	}
	r.as.mu.Lock()
	defer r.as.mu.Unlock()
	if n != 1 || r.as.refreshN != 1 {
		t.Fatalf("%d refreshes, want 1", r.as.refreshN)
	}
}
