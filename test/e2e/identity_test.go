//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/idp"
)

// The identity tests (SPEC §13) run Ory Hydra (built into .tools/bin by
// .ci/install-e2e-tools), the RFC 8693 server of test/idp/tokenexchange and
// whoami downstreams (test/idp), and call the gateway with the official Go
// SDK client carrying Hydra's client-credentials tokens.

// TestIdentityRig checks the rig itself, without the gateway's JWT mode:
// Hydra issues the tokens the other tests rely on (claims as documented on
// type hydra, verifiable through OIDC discovery), the token-exchange server
// exchanges them per RFC 8693, and whoami reports the bearer it got, also
// through a gateway of today (passthrough mode with the seeds' opt-in
// forward_inbound_auth, the flow token_exchange replaces).
func TestIdentityRig(t *testing.T) {
	h := startHydra(t)
	alice := hydraClient{ID: "alice-app", Secret: "alice-" + randomHex(8), Scopes: []string{"mcp.tools", "agents.admin"},
		Audiences: []string{"https://gw.test/agents/tools/mcp", "https://gw.test/agents/admin/mcp"}, Groups: []string{"ops", "dev"}}
	bob := hydraClient{ID: "bob-app", Secret: "bob-" + randomHex(8), Scopes: []string{"mcp.tools"}, AuthMethod: "client_secret_post"}
	h.createClient(t, alice)
	h.createClient(t, bob)

	// Hydra's tokens and their claims.
	start := time.Now()
	tok := h.token(t, alice, []string{"mcp.tools"}, "https://gw.test/agents/tools/mcp")
	t.Logf("first Hydra token in %s", time.Since(start).Round(time.Millisecond))
	keys := h.keys(t)
	ctx := context.Background()
	claims, err := keys.Verify(ctx, tok, 0)
	if err != nil {
		t.Fatalf("Hydra's token does not verify against its discovered JWKS: %v", err)
	}
	header, _, _ := idp.Decode(tok)
	t.Logf("Hydra token header %v claims %v", header, claims)
	if header["alg"] != "RS256" || header["kid"] == "" {
		t.Errorf("header %v, want RS256 with a kid", header)
	}
	check := func(what string, got, want any) {
		t.Helper()
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s = %s, want %s", what, gb, wb)
		}
	}
	check("iss", claims.String("iss"), h.Issuer)
	check("sub", claims.String("sub"), "alice-app")
	check("client_id", claims.String("client_id"), "alice-app")
	check("aud", claims.Strings("aud"), []string{"https://gw.test/agents/tools/mcp"})
	check("scp", claims.Strings("scp"), []string{"mcp.tools"})
	check("groups", claims.Strings("groups"), []string{"ops", "dev"})
	if _, ok := claims["scope"]; ok {
		t.Errorf("Hydra now writes a scope claim: %v", claims["scope"])
	}
	// Hydra's default lifespan is 1h, counted from the start of the request
	// (exp - iat comes out a few seconds short).
	if life := claims.Time("exp").Sub(claims.Time("iat")); life > time.Hour || life < 55*time.Minute {
		t.Errorf("lifetime %s, want Hydra's default 1h", life)
	}
	// Both audiences at once; none at all; client_secret_post.
	_, c2, _ := idp.Decode(h.token(t, alice, []string{"mcp.tools", "agents.admin"}, "https://gw.test/agents/tools/mcp", "https://gw.test/agents/admin/mcp"))
	check("aud (two)", c2.Strings("aud"), []string{"https://gw.test/agents/tools/mcp", "https://gw.test/agents/admin/mcp"})
	check("scp (two)", c2.Strings("scp"), []string{"mcp.tools", "agents.admin"})
	_, c3, _ := idp.Decode(h.token(t, bob, nil))
	if aud, ok := c3["aud"].([]any); !ok || len(aud) != 0 {
		t.Errorf("bob asked for no audience: aud = %v, want []", c3["aud"])
	}
	check("bob sub", c3.String("sub"), "bob-app")
	if _, ok := c3["groups"]; ok {
		t.Errorf("bob has no groups, got %v", c3["groups"])
	}
	// Hydra refuses what the client may not ask for.
	if code, out := h.tokenRequest(t, bob, nil, "https://gw.test/agents/tools/mcp"); code != http.StatusBadRequest || out["error"] != "invalid_request" {
		t.Errorf("audience not allowed: %d %v", code, out)
	}
	if code, out := h.tokenRequest(t, bob, []string{"agents.admin"}); code != http.StatusBadRequest || out["error"] != "invalid_scope" {
		t.Errorf("scope not allowed: %d %v", code, out)
	}
	code, _, _ := mustGet(t, h.Issuer+"/.well-known/oauth-authorization-server", nil)
	t.Logf("Hydra's RFC 8414 metadata: HTTP %d (discovery must use /.well-known/openid-configuration)", code)

	// The token-exchange server.
	as := startExchangeAS(t, h, "pallasgw:gw-secret,other:x")
	form := url.Values{"grant_type": {idp.GrantTokenExchange}, "subject_token": {tok}, "subject_token_type": {idp.TokenTypeAccessToken},
		"audience": {"billing"}, "scope": {"billing.read"}}
	var exchanged string
	for _, post := range []bool{false, true} {
		code, out, err := idp.ExchangeRequest(ctx, as.URL+"/token", "pallasgw", "gw-secret", post, form)
		if err != nil || code != http.StatusOK {
			t.Fatalf("exchange (post=%v): %d %v %v", post, code, out, err)
		}
		exchanged = out["access_token"].(string)
		if out["token_type"] != "Bearer" || out["issued_token_type"] != idp.TokenTypeAccessToken || out["expires_in"].(float64) <= 0 {
			t.Errorf("exchange answer %v", out)
		}
	}
	asKeys := &idp.KeySet{URL: as.URL + "/jwks.json"}
	ec, err := asKeys.Verify(ctx, exchanged, 0)
	if err != nil {
		t.Fatalf("exchanged token: %v", err)
	}
	check("exchanged iss", ec.String("iss"), as.URL)
	check("exchanged sub", ec.String("sub"), "alice-app")
	check("exchanged aud", ec.Strings("aud"), []string{"billing"})
	check("exchanged client_id", ec.String("client_id"), "pallasgw")
	check("exchanged scope", ec.String("scope"), "billing.read")
	if code, out, _ := idp.ExchangeRequest(ctx, as.URL+"/token", "pallasgw", "wrong", false, form); code != http.StatusUnauthorized || out["error"] != "invalid_client" {
		t.Errorf("bad client secret: %d %v", code, out)
	}
	bad := url.Values{"grant_type": {idp.GrantTokenExchange}, "subject_token": {tok[:len(tok)-4] + "AAAA"}, "subject_token_type": {idp.TokenTypeAccessToken}, "audience": {"billing"}}
	if code, out, _ := idp.ExchangeRequest(ctx, as.URL+"/token", "pallasgw", "gw-secret", false, bad); code != http.StatusBadRequest || out["error"] != "invalid_request" {
		t.Errorf("forged subject token: %d %v", code, out)
	}
	// A token of the exchange server is not a Hydra token.
	bad.Set("subject_token", exchanged)
	if code, out, _ := idp.ExchangeRequest(ctx, as.URL+"/token", "pallasgw", "gw-secret", false, bad); code != http.StatusBadRequest {
		t.Errorf("subject token from another issuer: %d %v", code, out)
	}
	if st := as.stats(t); st.Exchanges != 2 || st.Refused != 3 || st.Recent[0].Subject != "alice-app" || !slices.Equal(st.Recent[0].Audience, []string{"billing"}) {
		t.Errorf("stats %+v", st)
	}

	// whoami, directly and through a gateway of today.
	fwd, fwdURL := startWhoami(t, keys)
	none, noneURL := startWhoami(t, nil)
	gw := startGateway(t, `
name: e2e-identity-rig
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    fwd: {transport: http, url: `+fwdURL+`, forward_inbound_auth: true}
    none: {transport: http, url: `+noneURL+`}
agents:
  rig: {kind: proxy, servers: [fwd, none]}
`)
	direct := mustSession(t, fwdURL, tok)
	if id := whoamiCall(t, direct, "whoami"); !id.Verified || id.Sub != "alice-app" || id.Iss != h.Issuer || id.Fingerprint != tok[len(tok)-8:] {
		t.Errorf("whoami, direct: %+v", id)
	}
	cs := mustSession(t, gw.Base+"/agents/rig/mcp", tok)
	names := toolNames(t, cs)
	for _, want := range []string{"fwd__whoami", "fwd__echo", "none__whoami", "none__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if id := whoamiCall(t, cs, "fwd__whoami"); !id.Verified || id.Sub != "alice-app" || id.Fingerprint != tok[len(tok)-8:] {
		t.Errorf("whoami through forward_inbound_auth: %+v", id)
	}
	if id := whoamiCall(t, cs, "none__whoami"); id.Authorization != "none" {
		t.Errorf("a server without forwarding got credentials: %+v", id)
	}
	for _, v := range none.Seen() {
		if v != "" {
			t.Errorf("the server without forwarding saw an Authorization header")
		}
	}
	if !slices.Contains(fwd.Seen(), "Bearer "+tok) {
		t.Errorf("the forwarding server never saw the caller's token")
	}
	if res, err := callTool(cs, "none__echo", map[string]any{"message": "hi"}); err != nil || !strings.Contains(jsonString(res.StructuredContent), "hi") {
		t.Errorf("echo: %v %v", err, res)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
