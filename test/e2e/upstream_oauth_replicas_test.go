//go:build e2e

package e2e

import (
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
	rig := startOAuthRig(t, "1h", nil)
	redisURL, _ := startRedis(t)

	var backends []*url.URL
	var next atomic.Int64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backends[int(next.Add(1))%len(backends)])
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Full duplex, as a balancer must be: a replica may answer (a
		// waiting call's stream starts with its elicitation) while the
		// proxy's transport still reads the caller's body to its end.
		// Without it net/http discards and closes that body when the
		// proxy writes the answer's headers (golang/go#15527), the
		// transport's read then fails and it closes the connection to
		// the replica mid-stream: the caller's stream ends without an
		// answer.
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("the balancer cannot go full duplex: %v", err)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)

	aliceTok, daveTok := "alice-"+randomHex(12), "dave-"+randomHex(12)
	cfg := strings.NewReplacer("{{LB}}", lb.URL, "{{REDIS}}", redisURL, "{{STATE_KEY}}", credentialsKey()).Replace(rig.config("e2e-oauth-replicas", `
public_url: "{{LB}}"
state_key: "{{STATE_KEY}}"
sessions: {store: "{{REDIS}}"}`, []string{"alice", "dave"}, `  desk: {kind: proxy, servers: [team]}`))
	env := []string{"ALICE_TOKEN=" + aliceTok, "DAVE_TOKEN=" + daveTok, "CREDENTIALS_KEY=" + credentialsKey()}
	var gws []*gateway
	for range 3 {
		g := startGateway(t, cfg, env...)
		gws = append(gws, g)
		u, _ := url.Parse(g.Base)
		backends = append(backends, u)
	}
	desk := lb.URL + "/agents/desk/mcp"

	// alice connects through the balancer: each step on the next replica.
	connectFromList(t, lb.URL, "alice", aliceTok)
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
		func() { connectFromLink(t, lb.URL, "dave", daveTok, asked.URL) })
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

	seen := rig.who.Seen()
	for i, g := range gws {
		g.Stop()
		noTokensIn(t, map[string]string{fmt.Sprintf("replica %d's log", i): g.Logs()}, []string{aliceTok, daveTok}, seen)
	}
}
