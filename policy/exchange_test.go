package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// tokenEndpoint is an RFC 8693 token endpoint that answers with
// "exchanged-for-<subject>" and records what it was asked.
type tokenEndpoint struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	last  map[string]string
	fail  atomic.Bool
}

func newTokenEndpoint(t *testing.T, expiresIn int) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.calls.Add(1)
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		id, secret, _ := r.BasicAuth()
		te.mu.Lock()
		te.last = map[string]string{"client": id + ":" + secret}
		for k := range r.PostForm {
			te.last[k] = r.PostForm.Get(k)
		}
		te.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if te.fail.Load() {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "subject " + r.PostForm.Get("subject_token") + " refused"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": "exchanged-for-" + r.PostForm.Get("subject_token"),
			"issued_token_type": tokenTypeAccess, "token_type": "Bearer", "expires_in": expiresIn})
	}))
	t.Cleanup(te.srv.Close)
	return te
}

func TestExchange(t *testing.T) {
	te := newTokenEndpoint(t, 300)
	var outcomes sync.Map
	e := &Exchanger{Observe: func(server, outcome string) {
		n, _ := outcomes.LoadOrStore(outcome, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}}
	spec := ExchangeSpec{Server: "billing", TokenURL: te.srv.URL, ClientID: "pallasgw", ClientSecret: "s3cret", Audience: "billing", Scopes: []string{"read", "write"}}
	ctx := context.Background()
	tok, err := e.Token(ctx, spec, "alice-token")
	if err != nil || tok != "exchanged-for-alice-token" {
		t.Fatalf("token %q, %v", tok, err)
	}
	te.mu.Lock()
	for k, want := range map[string]string{"grant_type": grantTokenExchange, "subject_token": "alice-token", "subject_token_type": tokenTypeAccess,
		"audience": "billing", "scope": "read write", "client": "pallasgw:s3cret"} {
		if te.last[k] != want {
			t.Errorf("%s = %q, want %q", k, te.last[k], want)
		}
	}
	te.mu.Unlock()
	// Cached per subject and server; concurrent first asks share one exchange.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if tok, err := e.Token(ctx, spec, "alice-token"); err != nil || tok != "exchanged-for-alice-token" {
				t.Errorf("cached: %q %v", tok, err)
			}
		})
	}
	wg.Wait()
	if n := te.calls.Load(); n != 1 {
		t.Errorf("%d exchanges for one subject, want 1", n)
	}
	if tok, _ := e.Token(ctx, spec, "bob-token"); tok != "exchanged-for-bob-token" {
		t.Errorf("bob got %q", tok)
	}
	other := spec
	other.Server, other.Audience = "files", "files"
	if _, err := e.Token(ctx, other, "alice-token"); err != nil || te.calls.Load() != 3 {
		t.Errorf("another server: %v, %d exchanges, want 3", err, te.calls.Load())
	}
	// A refusal is an error naming the server and the code, never the token.
	te.fail.Store(true)
	_, err = e.Token(ctx, spec, "carol-token")
	if err == nil || !strings.Contains(err.Error(), "billing") || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), "carol-token") {
		t.Errorf("refused exchange: %v", err)
	}
	if n, _ := outcomes.Load("error"); n == nil || n.(*atomic.Int64).Load() != 1 {
		t.Error("the failed exchange was not observed as an error")
	}
	te.srv.Close()
	if _, err := e.Token(ctx, spec, "dave-token"); err == nil || strings.Contains(err.Error(), "dave-token") {
		t.Errorf("endpoint down: %v", err)
	}
}

// A token that expires within the margin is not cached.
func TestExchangeShortLivedNotCached(t *testing.T) {
	te := newTokenEndpoint(t, 20)
	e := &Exchanger{}
	spec := ExchangeSpec{Server: "billing", TokenURL: te.srv.URL, ClientID: "pallasgw", Audience: "billing"}
	for range 2 {
		if _, err := e.Token(context.Background(), spec, "alice-token"); err != nil {
			t.Fatal(err)
		}
	}
	if n := te.calls.Load(); n != 2 {
		t.Errorf("%d exchanges, want 2 (a 20 s token is not cached with a 30 s margin)", n)
	}
}
