package upstreamauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAS is an OAuth authorization server of the tests: OpenID discovery
// only (as Ory Hydra), dynamic registration, a consent that approves at
// once for the subject the test names, authorization code with PKCE S256
// checked, rotating refresh tokens, revocation. Every token it issues is
// recorded, for the tests that grep for them.
type fakeAS struct {
	srv *httptest.Server

	mu        sync.Mutex
	clients   map[string]string // id -> secret
	codes     map[string]fakeCode
	refreshes map[string]string // live refresh token -> subject
	issued    []string          // every access and refresh token
	refreshN  int               // refresh grants answered
	tries     int               // refresh grants asked for, answered or not
	expiresIn int               // seconds; 0: 3600
	down      bool
}

type fakeCode struct{ client, challenge, redirect, subject, resource string }

func newFakeAS(t testing.TB) *fakeAS {
	a := &fakeAS{clients: map[string]string{}, codes: map[string]fakeCode{}, refreshes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize",
			"token_endpoint": a.srv.URL + "/token", "userinfo_endpoint": a.srv.URL + "/userinfo", "registration_endpoint": a.srv.URL + "/register", "revocation_endpoint": a.srv.URL + "/revoke",
			"scopes_supported": []string{"openid", "offline_access", "repo"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var doc map[string]any
		_ = json.NewDecoder(r.Body).Decode(&doc)
		a.mu.Lock()
		id, secret := fmt.Sprintf("client-%d", len(a.clients)+1), randomToken()
		a.clients[id] = secret
		a.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_secret": secret, "redirect_uris": doc["redirect_uris"]})
	})
	// /authorize approves for the subject in the "as" cookie of the
	// browser (the person signed in at the authorization server).
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		c, err := r.Cookie("as")
		if err != nil || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "no subject or no PKCE", http.StatusBadRequest)
			return
		}
		code := randomToken()
		a.mu.Lock()
		a.codes[code] = fakeCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), subject: c.Value, resource: q.Get("resource")}
		a.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", a.token)
	mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		sub := subjectOf(r.Header.Get("Authorization"))
		a.mu.Lock()
		ok := slices.Contains(a.issued, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		a.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sub": sub})
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		delete(a.refreshes, r.PostFormValue("token"))
		a.mu.Unlock()
	})
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		down := a.down
		a.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	id, secret, _ := r.BasicAuth()
	a.mu.Lock()
	defer a.mu.Unlock()
	fail := func(code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q}`, code)
	}
	if a.clients[id] != secret || secret == "" {
		fail("invalid_client")
		return
	}
	var subject string
	switch r.PostFormValue("grant_type") {
	case "authorization_code":
		c, ok := a.codes[r.PostFormValue("code")]
		delete(a.codes, r.PostFormValue("code"))
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if !ok || c.client != id || c.redirect != r.PostFormValue("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			fail("invalid_grant")
			return
		}
		subject = c.subject
	case "refresh_token":
		a.tries++
		s, ok := a.refreshes[r.PostFormValue("refresh_token")]
		delete(a.refreshes, r.PostFormValue("refresh_token")) // rotated: a used refresh token is gone
		if !ok {
			fail("invalid_grant")
			return
		}
		a.refreshN++
		subject = s
	default:
		fail("unsupported_grant_type")
		return
	}
	at, rt := "at-"+subject+"."+randomToken(), "rt-"+subject+"."+randomToken()
	a.refreshes[rt] = subject
	a.issued = append(a.issued, at, rt)
	exp := a.expiresIn
	if exp == 0 {
		exp = 3600
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": exp})
}

func (a *fakeAS) tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string{}, a.issued...)
}

// subjectOf is the subject a fake access token was issued to.
func subjectOf(auth string) string {
	s, _, _ := strings.Cut(strings.TrimPrefix(auth, "Bearer at-"), ".")
	return s
}

// fakeResource is a downstream that answers 401 with its protected
// resource metadata, naming as.
func fakeResource(t testing.TB, as *fakeAS) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.srv.URL}, "scopes_supported": []string{"repo"}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv
}
