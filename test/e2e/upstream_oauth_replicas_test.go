//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pallasgw/pallasgw/test/idp"
)

// TestUpstreamOAuthReplicas: three gateways sharing a Redis, a state_key
// and a credentials key, behind a balancer of the test that sends each
// request to the next replica (the public_url). A person's sign-in, link,
// provider round trip and callback land on different replicas; a waiting
// call (URL elicitation) on one replica goes on when the callback lands on
// whichever replica the balancer picks (another one, two times in three);
// every replica then serves each caller its own token.
func TestUpstreamOAuthReplicas(t *testing.T) {
	h := startHydraAuthCode(t, "1h")
	who, whoURL := startWhoami(t, &idp.KeySet{URL: h.Issuer + "/.well-known/jwks.json"})
	downPort := freePorts(t, 1)[0]
	downURL := fmt.Sprintf("http://127.0.0.1:%d/agents/tools/mcp", downPort)
	startGatewayOn(t, downPort, strings.NewReplacer("{{ISSUER}}", h.Issuer, "{{WHOAMI}}", whoURL).Replace(`
name: e2e-team
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: jwt
  jwt: {issuer: {{ISSUER}}, clock_skew: 1s}
mcp:
  servers:
    whoami: {transport: http, url: {{WHOAMI}}, forward_inbound_auth: true}
agents:
  tools: {kind: proxy, servers: [whoami]}
`))
	redisURL, _ := startRedis(t)

	var backends []*url.URL
	var next atomic.Int64
	lb := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backends[int(next.Add(1))%len(backends)])
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	})
	t.Cleanup(lb.Close)

	key := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	aliceTok, daveTok := "alice-"+randomHex(12), "dave-"+randomHex(12)
	cfg := strings.NewReplacer("{{DOWN}}", downURL, "{{LB}}", lb.URL, "{{REDIS}}", redisURL, "{{STATE_KEY}}", key()).Replace(`
name: e2e-oauth-replicas
listen: "127.0.0.1:{{PORT}}"
public_url: "{{LB}}"
state_key: "{{STATE_KEY}}"
sessions: {store: "{{REDIS}}"}
auth:
  mode: tokens
  tokens:
    - {name: alice, token: ${ALICE_TOKEN}}
    - {name: dave, token: ${DAVE_TOKEN}}
credentials: {key: ${CREDENTIALS_KEY}}
mcp:
  servers:
    team:
      url: {{DOWN}}
      oauth: {audience: {{DOWN}}}
agents:
  desk: {kind: proxy, servers: [team]}
`)
	env := []string{"ALICE_TOKEN=" + aliceTok, "DAVE_TOKEN=" + daveTok, "CREDENTIALS_KEY=" + key()}
	var gws []*gateway
	for range 3 {
		g := startGateway(t, cfg, env...)
		gws = append(gws, g)
		u, _ := url.Parse(g.Base)
		backends = append(backends, u)
	}
	desk := lb.URL + "/agents/desk/mcp"

	// alice connects through the balancer: each step on the next replica.
	alice := person(t, "alice")
	_, body := browse(t, alice, http.MethodGet, lb.URL+"/connect/", nil)
	if code, body := browse(t, alice, http.MethodPost, lb.URL+"/connect/signin", url.Values{"token": {aliceTok}, "next": {"/connect/"}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK {
		t.Fatalf("alice signs in: %d %s", code, body)
	}
	if code, body := browse(t, alice, http.MethodPost, lb.URL+"/connect/start", url.Values{"server": {"team"}}); code != http.StatusOK || !strings.Contains(body, "Connected to team") {
		t.Fatalf("alice connects across replicas: %d %s", code, body)
	}
	// Her session's calls, each on the next replica, carry her token.
	s := openLegacy(t, desk, aliceTok, "2025-11-25")
	if names := s.tools(t); !strings.Contains(strings.Join(names, ","), "whoami") {
		t.Fatalf("alice lists %v", names)
	}
	for i := range 6 {
		if id, a, text := s.whoami(t); id.Sub != "alice" || !id.Verified {
			t.Fatalf("alice's call %d: %+v (%+v %s)", i, id, a.Error, text)
		}
	}

	// dave's call waits on one replica while his callback lands on another.
	dave := openLegacyCaps(t, desk, daveTok, "2025-11-25", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	var asked struct{ Mode, URL string }
	a := dave.callAsked(t, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}},
		func(method string, params json.RawMessage) any {
			if json.Unmarshal(params, &asked) != nil || asked.Mode != "url" || !strings.HasPrefix(asked.URL, lb.URL+"/connect/") {
				t.Errorf("dave was asked %s %s", method, params)
			}
			return map[string]any{"action": "accept"}
		},
		func() {
			b := person(t, "dave")
			_, body := browse(t, b, http.MethodGet, asked.URL, nil)
			if code, body := browse(t, b, http.MethodPost, lb.URL+"/connect/signin", url.Values{"token": {daveTok},
				"next": {strings.TrimPrefix(asked.URL, lb.URL)}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK || !strings.Contains(body, "Connected to team") {
				t.Errorf("dave connects: %d %s", code, body)
			}
		})
	var res struct {
		StructuredContent idp.Identity `json:"structuredContent"`
	}
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || res.StructuredContent.Sub != "dave" {
		t.Fatalf("dave's waiting call: %+v %s", a.Error, a.Result)
	}
	for i := range 3 {
		if id, _, _ := s.whoami(t); id.Sub != "alice" {
			t.Fatalf("alice's call %d after dave connected: %+v", i, id)
		}
	}

	seen := who.Seen()
	for i, g := range gws {
		g.Stop()
		logs := g.Logs()
		for _, needle := range append([]string{"ory_rt_", "ory_ac_", aliceTok, daveTok}, seen...) {
			n := strings.TrimPrefix(needle, "Bearer ")
			if parts := strings.Split(n, "."); len(parts) == 3 {
				n = parts[2]
			}
			if n != "" && strings.Contains(logs, n) {
				t.Errorf("replica %d's log holds a token (%.12s…)", i, n)
			}
		}
	}
}
