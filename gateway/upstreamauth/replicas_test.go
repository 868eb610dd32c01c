package upstreamauth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/test/gwtest"
)

// TestReplicas: three Managers sharing a Redis, behind one public URL that
// sends each request to the next replica: a link minted by one, opened on
// another, called back on a third, connects the caller on every replica;
// a revocation on one reaches the others' caches.
func TestReplicas(t *testing.T) {
	redis := gwtest.StartRedis(t)
	as := newFakeAS(t)
	res := fakeResource(t, as)
	var handlers []http.Handler
	var next atomic.Int64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers[int(next.Add(1))%len(handlers)].ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	cfg, err := config.Parse("t.yaml", []byte(`name: t
reload: {poll_interval: 0}
public_url: `+gw.URL+`
auth: {mode: tokens, tokens: [{name: alice, token: `+aliceToken+`}]}
sessions: {store: "`+redis.URL()+`"}
credentials: {key: `+key+`}
mcp:
  servers:
    gh: {url: "`+res.URL+`/mcp", oauth: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := policy.NewAuthenticator("tokens", []policy.TokenSpec{{Name: "alice", Token: aliceToken}})
	var replicas []*Manager
	for range 3 {
		st, err := sessions.NewRedis(redis.URL(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		m, err := New(cfg, auth, Options{KV: st, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		replicas = append(replicas, m)
		handlers = append(handlers, m.Handler())
	}
	ctx := context.Background()
	_, err = replicas[0].Authorization(ctx, "gh", "token:alice")
	link := connectURL(t, err)
	for i, m := range replicas[1:] { // known absent everywhere: cached as such
		if _, err := m.Authorization(ctx, "gh", "token:alice"); err == nil {
			t.Fatalf("replica %d: connected before connecting", i+1)
		}
	}
	if code, body := get(t, r0browser(t, as), link, aliceToken); code != http.StatusOK || !strings.Contains(body, "Connected to gh") {
		t.Fatalf("connect across replicas: %d %s", code, body)
	}
	// Each replica sees it once the invalidation (published through Redis,
	// asynchronously) arrives; until then one that cached "not connected"
	// may still say so.
	for i, m := range replicas {
		deadline := time.Now().Add(10 * time.Second)
		for {
			a, err := m.Authorization(ctx, "gh", "token:alice")
			if err == nil && subjectOf(a) == "alice" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d after connecting: %q %v", i, a, err)
			}
			time.Sleep(10 * time.Millisecond) // polling for the invalidation
		}
	}
	// Due for renewal everywhere at once: one replica renews (the
	// authorization server rotates refresh tokens: a second renewal with
	// the same one would be refused), the others take its token.
	tok, err := replicas[0].vault.load(ctx, "token:alice", "gh", as.srv.URL)
	if err != nil || tok == nil {
		t.Fatalf("alice's token in the store: %v", err)
	}
	aged := *tok
	aged.Issued, aged.Expiry = time.Now().Add(-time.Hour), time.Now().Add(10*time.Second)
	if err := replicas[0].vault.put(ctx, "token:alice", "gh", as.srv.URL, &aged); err != nil {
		t.Fatal(err)
	}
	for i, m := range replicas { // every cache holds the aged token
		deadline := time.Now().Add(10 * time.Second)
		for {
			if got, _ := m.vault.get(ctx, "token:alice", "gh", as.srv.URL); got != nil && got.Expiry.Equal(aged.Expiry) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never saw the aged token", i)
			}
			time.Sleep(10 * time.Millisecond) // polling for the invalidation
		}
	}
	as.mu.Lock()
	tries := as.tries
	as.mu.Unlock()
	auths := make([]string, len(replicas))
	var wg sync.WaitGroup
	for i, m := range replicas {
		wg.Go(func() {
			a, err := m.Authorization(ctx, "gh", "token:alice")
			if err != nil {
				t.Errorf("replica %d renewing: %v", i, err)
			}
			auths[i] = a
		})
	}
	wg.Wait()
	as.mu.Lock()
	tries = as.tries - tries
	as.mu.Unlock()
	if tries != 1 {
		t.Errorf("%d renewals asked of the authorization server by 3 replicas at once, want 1", tries)
	}
	for i, a := range auths {
		if a != auths[0] || a == "Bearer "+aged.Access || subjectOf(a) != "alice" {
			t.Fatalf("replica %d has %q, replica 0 %q", i, a, auths[0])
		}
	}

	// Revoked on replica 2: replicas 0 and 1 drop their cached token when
	// the invalidation arrives (published through Redis).
	if err := replicas[2].vault.put(ctx, "token:alice", "gh", as.srv.URL, nil); err != nil {
		t.Fatal(err)
	}
	for i, m := range replicas[:2] {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := m.Authorization(ctx, "gh", "token:alice")
			var cr *agents.ConnectRequired
			if errors.As(err, &cr) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still serves a revoked connection: %v", i, err)
			}
			time.Sleep(10 * time.Millisecond) // polling for the invalidation
		}
	}
}

func r0browser(t *testing.T, as *fakeAS) *http.Client {
	r := &rig{as: as}
	return r.browser(t, "alice")
}
