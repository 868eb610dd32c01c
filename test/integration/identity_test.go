package integration

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testIDP is an identity provider in the test process: OIDC discovery, a
// JWKS, and an RFC 8693 token endpoint whose tokens say whom they were
// exchanged for ("exchanged:<sub>:<audience>").
type testIDP struct {
	*httptest.Server
	key       *rsa.PrivateKey
	exchanges atomic.Int64
}

func newTestIDP(t *testing.T) *testIDP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &testIDP{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": p.URL, "jwks_uri": p.URL + "/jwks", "token_endpoint": p.URL + "/token"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		enc := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": enc(key.N.Bytes()), "e": enc(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		p.exchanges.Add(1)
		r.ParseForm()
		id, secret, _ := r.BasicAuth()
		if id != "pallasgw" || secret != "gateway-client-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
			return
		}
		subject, err := jwt.Parse(r.PostForm.Get("subject_token"), func(*jwt.Token) (any, error) { return &key.PublicKey, nil })
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		sub, _ := subject.Claims.GetSubject()
		json.NewEncoder(w).Encode(map[string]any{"access_token": "exchanged:" + sub + ":" + r.PostForm.Get("audience"),
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 600})
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// token signs claims for sub and audience aud, changed by mod.
func (p *testIDP) token(t *testing.T, sub, aud string, mod func(jwt.MapClaims)) string {
	t.Helper()
	now := time.Now()
	c := jwt.MapClaims{"iss": p.URL, "sub": sub, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "agents.use"}
	if mod != nil {
		mod(c)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(p.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bearerSession connects the Go SDK client to url with the bearer token.
func bearerSession(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "identity-it", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: headerRT{"Authorization": "Bearer " + token}}}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestJWTCallers: a proxy agent in auth mode jwt, its callers from an
// identity provider: RFC 9728 metadata and challenges, bad tokens refused
// with their reason counted and never logged, scopes, callers defined by
// claims, a static service token beside them, and token exchange toward a
// downstream that sees only the exchanged token.
func TestJWTCallers(t *testing.T) {
	idp := newTestIDP(t)
	plain, billing := newCaptureServer(t, "plain"), newCaptureServer(t, "billing")
	g := startGateway(t, fmt.Sprintf(`
name: identity
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
auth:
  mode: jwt
  tokens:
    - {name: batch-job, token: static-service-token-0123456789}
  jwt:
    issuer: %s
    scopes: {"px": [agents.use], "admin_*": [agents.admin]}
mcp:
  servers:
    plain: {url: %s/mcp}
    billing:
      url: %s/mcp
      token_exchange: {token_url: %s/token, client_id: pallasgw, client_secret: gateway-client-secret, audience: billing-api}
policy:
  callers:
    readers: {match: {groups: readers}, tools: {deny: ["*__echo_headers"]}}
agents:
  px: {kind: proxy, servers: [plain, billing]}
  admin_px: {kind: proxy, servers: [plain]}
`, idp.URL, plain.URL, billing.URL, idp.URL))
	pxURL := g.Base + "/agents/px/mcp"
	metaURL := g.Base + "/.well-known/oauth-protected-resource/agents/px/mcp"

	t.Run("metadata", func(t *testing.T) {
		code, _, body := httpGet(t, metaURL, nil)
		var doc map[string]any
		if code != 200 || json.Unmarshal([]byte(body), &doc) != nil {
			t.Fatalf("%d %s", code, body)
		}
		if doc["resource"] != pxURL || fmt.Sprint(doc["authorization_servers"]) != "["+idp.URL+"]" ||
			fmt.Sprint(doc["scopes_supported"]) != "[agents.use]" || fmt.Sprint(doc["bearer_methods_supported"]) != "[header]" {
			t.Errorf("metadata %s", body)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		good := idp.token(t, "alice", pxURL, nil)
		for _, c := range []struct {
			name, auth, agent string
			status            int
			reason, challenge string
		}{
			{"no token", "", "px", 401, "", `Bearer resource_metadata="` + metaURL + `", scope="agents.use"`},
			{"expired", "Bearer " + idp.token(t, "alice", pxURL, func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), "px", 401, "expired", `error="invalid_token"`},
			{"wrong audience", "Bearer " + idp.token(t, "alice", g.Base+"/agents/admin_px/mcp", nil), "px", 401, "wrong_audience", `error="invalid_token"`},
			{"wrong issuer", "Bearer " + idp.token(t, "alice", pxURL, func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }), "px", 401, "wrong_issuer", `error="invalid_token"`},
			{"garbage", "Bearer not-a-jwt-at-all", "px", 401, "malformed", `error="invalid_token"`},
			{"missing scope", "Bearer " + idp.token(t, "alice", g.Base+"/agents/admin_px/mcp", nil), "admin_px", 403, "insufficient_scope", `Bearer error="insufficient_scope", scope="agents.admin"`},
		} {
			t.Run(c.name, func(t *testing.T) {
				before, _ := g.metric(t, fmt.Sprintf(`pallasgw_auth_failures_total{reason=%q}`, c.reason))
				hdr := map[string]string{}
				if c.auth != "" {
					hdr["Authorization"] = c.auth
				}
				resp, err := post(g.Base+"/agents/"+c.agent+"/mcp", listTools, hdr)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), c.challenge) {
					t.Errorf("%d %q; want %d with %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), c.status, c.challenge)
				}
				if c.reason != "" {
					eventually(t, 5*time.Second, "the refusal counted", func() bool {
						after, _ := g.metric(t, fmt.Sprintf(`pallasgw_auth_failures_total{reason=%q}`, c.reason))
						return after == before+1
					})
				}
			})
		}
		if _, err := bearerSession(t, pxURL, good); err != nil {
			t.Errorf("a good token: %v", err)
		}
	})

	t.Run("callers from claims", func(t *testing.T) {
		alice, err := bearerSession(t, pxURL, idp.token(t, "alice", pxURL, nil))
		if err != nil {
			t.Fatal(err)
		}
		reader, err := bearerSession(t, pxURL, idp.token(t, "rita", pxURL, func(c jwt.MapClaims) { c["groups"] = []any{"staff", "readers"} }))
		if err != nil {
			t.Fatal(err)
		}
		if names := strings.Join(toolNames(t, alice), " "); !strings.Contains(names, "plain__echo_headers") {
			t.Errorf("alice (policy.default) sees %s", names)
		}
		if names := strings.Join(toolNames(t, reader), " "); strings.Contains(names, "echo_headers") || !strings.Contains(names, "plain__whoami") {
			t.Errorf("a reader sees %s", names)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		res, err := reader.CallTool(ctx, &mcp.CallToolParams{Name: "plain__echo_headers"})
		if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "denied by policy") {
			t.Errorf("a reader's call of a denied tool: %v %+v", err, res)
		}
		eventually(t, 5*time.Second, "the audit line names the caller and its rule", func() bool {
			return g.logged(`"caller":"rita"`) && g.logged(`"caller_rule":"readers"`)
		})
	})

	t.Run("token exchange", func(t *testing.T) {
		tok := idp.token(t, "erin", pxURL, nil) // a caller not seen before: nothing cached
		// Counted from before the session: its server/discover already asks
		// the downstreams for their capabilities with the exchanged token.
		before := idp.exchanges.Load()
		cs, err := bearerSession(t, pxURL, tok)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for range 3 {
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "billing__whoami"}); err != nil || res.IsError {
				t.Fatalf("billing__whoami: %v %+v", err, res)
			}
		}
		if got := billing.values("Authorization"); len(got) == 0 || !contains(got, "Bearer exchanged:erin:billing-api") {
			t.Errorf("billing received %v, want the exchanged token", got)
		}
		for _, v := range append(billing.values("Authorization"), plain.values("Authorization")...) {
			if strings.Contains(v, tok) || strings.HasPrefix(v, "Bearer ey") {
				t.Errorf("a downstream received a caller's token: %.30s…", v)
			}
		}
		if n := idp.exchanges.Load() - before; n != 1 {
			t.Errorf("%d exchanges for one caller, want 1 (cached)", n)
		}
	})

	t.Run("static service token", func(t *testing.T) {
		cs, err := bearerSession(t, pxURL, "static-service-token-0123456789")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "plain__whoami"}); err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		// billing needs a token exchanged for an identity provider token.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "billing__whoami"})
		if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "no identity provider token") {
			t.Errorf("a static caller's billing call: %v %+v", err, res)
		}
		for _, v := range append(billing.values("Authorization"), plain.values("Authorization")...) {
			if strings.Contains(v, "static-service-token") {
				t.Error("the static token travelled downstream")
			}
		}
	})

	if logs := g.allLogs(); strings.Contains(logs, "eyJ") || strings.Contains(logs, "static-service-token") ||
		strings.Contains(logs, "gateway-client-secret") || strings.Contains(logs, "exchanged:alice") {
		t.Error("a token or secret is in the gateway's log")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
