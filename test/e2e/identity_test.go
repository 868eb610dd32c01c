//go:build e2e

package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
	"github.com/pallasgw/pallasgw/test/idp"
)

// The identity tests run Ory Hydra (built into .tools/bin by
// .ci/install-e2e-tools), the RFC 8693 server of test/idp/tokenexchange and
// whoami downstreams (test/idp), and call the gateway with the official Go
// SDK client carrying Hydra's client-credentials tokens.

// TestIdentityRig checks the rig itself, without the gateway's JWT mode:
// Hydra issues the tokens the other tests rely on (claims as documented on
// type hydra, verifiable through OIDC discovery), the token-exchange server
// exchanges them per RFC 8693, and whoami reports the bearer it got, also
// through a gateway of today (passthrough mode with the opt-in
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

// startGatewayOn is startGateway on a port chosen beforehand: JWT
// audiences default to the agent's URL, which the tokens must name.
func startGatewayOn(t *testing.T, port int, cfg string, env ...string) *gateway {
	t.Helper()
	return &gateway{gwtest.Start(t, gwtest.Options{Config: cfg, Port: port, Env: env, ProcessGroup: true,
		StopTimeout: 15 * time.Second, TailBytes: 8000, LogOnFailure: true})}
}

// initializeBody is a JSON-RPC initialize request, for the raw HTTP checks
// of the 401/403 answers.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"1"}}}`

// rawMCP POSTs an initialize to an agent with an optional bearer.
func rawMCP(t *testing.T, url, token string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// challenge parses a `WWW-Authenticate: Bearer k="v", ...` header (the
// Bearer challenge only) into its parameters; nil when there is none.
func challenge(h http.Header) map[string]string {
	for _, v := range h.Values("WWW-Authenticate") {
		scheme, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		out := map[string]string{}
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimLeft(strings.TrimSpace(rest), ",") {
			rest = strings.TrimSpace(rest)
			k, after, ok := strings.Cut(rest, "=")
			if !ok {
				break
			}
			k = strings.TrimSpace(k)
			if strings.HasPrefix(after, `"`) {
				end := strings.Index(after[1:], `"`)
				if end < 0 {
					out[k] = after[1:]
					break
				}
				out[k], rest = after[1:1+end], after[2+end:]
			} else {
				val, more, _ := strings.Cut(after, ",")
				out[k], rest = strings.TrimSpace(val), more
			}
		}
		return out
	}
	return nil
}

// authFailures is every pallasgw_auth_failures_total series by its labels.
func authFailures(t *testing.T, gw *gateway) map[string]float64 {
	t.Helper()
	m, err := gw.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for k, v := range m {
		if k == "pallasgw_auth_failures_total" || strings.HasPrefix(k, "pallasgw_auth_failures_total{") {
			out[k] = v
		}
	}
	return out
}

// failureDelta is what changed between two authFailures readings.
func failureDelta(before, after map[string]float64) (total float64, moved []string) {
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			total += d
			moved = append(moved, k)
		}
	}
	slices.Sort(moved)
	return total, moved
}

// forged tokens the gateway must refuse, made from a real Hydra token.
func algNoneToken(real string) string {
	parts := strings.Split(real, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
}

// hsWithPublicKey is the key-confusion forgery: HS256 with the issuer's
// RSA public key (PEM, as a naive HMAC verifier would read it) as secret,
// under the real kid.
func hsWithPublicKey(t *testing.T, h *hydra, real string) string {
	t.Helper()
	header, _, _ := idp.Decode(real)
	kid, _ := header["kid"].(string)
	_, _, body := mustGet(t, h.Issuer+"/.well-known/jwks.json", nil)
	var set idp.JWKS
	json.Unmarshal([]byte(body), &set)
	var pemKey []byte
	for _, k := range set.Keys {
		if k.Kid != kid {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		pemKey = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	if pemKey == nil {
		t.Fatalf("kid %s not in Hydra's JWKS", kid)
	}
	hb, _ := json.Marshal(map[string]string{"alg": "HS256", "kid": kid, "typ": "JWT"})
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + strings.Split(real, ".")[1]
	mac := hmac.New(sha256.New, pemKey)
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// foreignKeyToken has a real token's claims, signed by a key Hydra never
// published (unknown kid).
func foreignKeyToken(t *testing.T, real string) string {
	t.Helper()
	_, claims, _ := idp.Decode(real)
	s, err := idp.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign("JWT", claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// checkNotLogged fails when any of the secrets is in the gateway's log
// (whole tokens, or their signature, the part that makes them usable).
func checkNotLogged(t *testing.T, gw *gateway, secrets map[string]string) {
	t.Helper()
	gw.Stop() // the whole log is written out on stop
	logs := gw.Logs()
	for what, s := range secrets {
		if s == "" {
			continue
		}
		needles := []string{s}
		if parts := strings.Split(s, "."); len(parts) == 3 && len(parts[2]) >= 16 {
			needles = append(needles, parts[2])
		}
		for _, n := range needles {
			if strings.Contains(logs, n) {
				t.Errorf("the gateway logged %s", what)
				break
			}
		}
	}
}

const jwtConfig = `
name: e2e-identity
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: jwt
  jwt:
    issuer: {{ISSUER}}               # JWKS by OIDC discovery
    clock_skew: 1s
    scopes: {"admin": [agents.admin]}
  tokens:
    - {name: svc, token: ${SVC_TOKEN}, agents: [tools]}
policy:
  callers:
    ops: {match: {groups: ops}}
    narrow: {match: {client_id: [narrow-app, unused-app]}, tools: {deny: ["whoami__echo"]}}
    svc: {agents: [tools]}
  default: {tools: {deny: ["*"]}}
mcp:
  servers:
    whoami: {transport: http, url: {{WHOAMI}}}
agents:
  tools: {kind: proxy, servers: [whoami]}
  admin: {kind: proxy, servers: [whoami]}
`

// TestIdentityJWT: a gateway in auth.mode jwt against Hydra.
// Valid tokens list and call tools with the official Go SDK client; the
// protected resource metadata and every challenge point at Hydra; bad
// tokens get 401 invalid_token and a missing scope 403 insufficient_scope,
// each counted in pallasgw_auth_failures_total; callers matched by claims
// (groups, client_id) see and may call only what their rule allows; a
// static token keeps working beside JWTs; no token reaches the log.
func TestIdentityJWT(t *testing.T) {
	h := startHydra(t)
	port := freePorts(t, 1)[0]
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	toolsURL, adminURL := base+"/agents/tools/mcp", base+"/agents/admin/mcp"
	all := []string{toolsURL, adminURL}
	alice := hydraClient{ID: "alice-app", Secret: randomHex(12), Scopes: []string{"mcp.tools", "agents.admin"}, Audiences: all, Groups: []string{"dev", "ops"}}
	narrow := hydraClient{ID: "narrow-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: all}
	stranger := hydraClient{ID: "stranger-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: all, Groups: []string{"dev"}}
	brief := hydraClient{ID: "brief-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: all, Groups: []string{"ops"}, Lifespan: "1s"}
	for _, c := range []hydraClient{alice, narrow, stranger, brief} {
		h.createClient(t, c)
	}
	whoami, whoamiURL := startWhoami(t, nil)
	asSecret := randomHex(8)
	as := startExchangeAS(t, h, "pallasgw:"+asSecret) // only as a foreign issuer here
	svcToken := randomHex(16)
	cfg := strings.NewReplacer("{{ISSUER}}", h.Issuer, "{{WHOAMI}}", whoamiURL).Replace(jwtConfig)
	gw := startGatewayOn(t, port, cfg, "SVC_TOKEN="+svcToken)

	aliceTools := h.token(t, alice, []string{"mcp.tools"}, toolsURL)
	secrets := map[string]string{"alice's token": aliceTools, "the static token": svcToken}

	// A valid token: list and call.
	cs := mustSession(t, toolsURL, aliceTools)
	if names := toolNames(t, cs); !slices.Contains(names, "whoami") || !slices.Contains(names, "echo") {
		t.Errorf("alice (rule ops, by groups) sees %v, want whoami and echo", names)
	}
	if res, err := callTool(cs, "echo", map[string]any{"message": "hello"}); err != nil || !strings.Contains(jsonString(res.StructuredContent), "hello") {
		t.Errorf("alice's echo: %v %v", err, res)
	}
	// A server without token_exchange or forwarding gets nothing of hers.
	if id := whoamiCall(t, cs, "whoami"); id.Authorization != "none" {
		t.Errorf("the downstream got credentials: %+v", id)
	}
	for _, v := range whoami.Seen() {
		if v != "" {
			t.Errorf("the downstream saw an Authorization header")
			break
		}
	}

	// Protected resource metadata (RFC 9728), and the way a client finds
	// the token endpoint from it.
	metaURL := base + "/.well-known/oauth-protected-resource/agents/tools/mcp"
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	code, hdr, body := mustGet(t, metaURL, nil)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(body), &meta) != nil {
		t.Fatalf("GET %s: %d %s %s", metaURL, code, hdr.Get("Content-Type"), body)
	}
	if meta.Resource != toolsURL || !slices.Equal(meta.AuthorizationServers, []string{h.Issuer}) || !slices.Equal(meta.BearerMethods, []string{"header"}) {
		t.Errorf("metadata %s", body)
	}
	code, _, body = mustGet(t, meta.AuthorizationServers[0]+"/.well-known/openid-configuration", nil)
	if code != http.StatusOK || !strings.Contains(body, `"token_endpoint":"`+h.Issuer+`/oauth2/token"`) {
		t.Errorf("the authorization server named by the metadata: %d %s", code, body)
	}
	code, _, body = mustGet(t, base+"/.well-known/oauth-protected-resource/agents/admin/mcp", nil)
	if code != http.StatusOK || !strings.Contains(body, "agents.admin") {
		t.Errorf("admin's metadata names no agents.admin scope: %d %s", code, body)
	}
	code, _, body = mustGet(t, base+"/.well-known/oauth-protected-resource", nil)
	t.Logf("root protected resource metadata: %d %s", code, body)

	refused := func(what, url, token string, wantCode int, wantErr string) map[string]string {
		t.Helper()
		before := authFailures(t, gw)
		code, hdr, body := rawMCP(t, url, token)
		ch := challenge(hdr)
		if code != wantCode || ch == nil || ch["error"] != wantErr {
			t.Errorf("%s: %d, WWW-Authenticate %q, body %s; want %d with error=%q", what, code, hdr.Values("WWW-Authenticate"), body, wantCode, wantErr)
		}
		if token != "" && strings.Contains(body, token) {
			t.Errorf("%s: the answer carries the token", what)
		}
		total, moved := failureDelta(before, authFailures(t, gw))
		if wantErr != "" && total < 1 {
			t.Errorf("%s: pallasgw_auth_failures_total did not move", what)
		}
		t.Logf("%s: %d %q; failures moved %v", what, code, hdr.Values("WWW-Authenticate"), moved)
		return ch
	}

	// No token: 401 naming the metadata.
	ch := refused("no token", toolsURL, "", http.StatusUnauthorized, "")
	if ch["resource_metadata"] != metaURL {
		t.Errorf("no token: resource_metadata %q, want %q", ch["resource_metadata"], metaURL)
	}
	ch = refused("no token, admin", adminURL, "", http.StatusUnauthorized, "")
	if !strings.Contains(ch["scope"], "agents.admin") || !strings.HasSuffix(ch["resource_metadata"], "/agents/admin/mcp") {
		t.Errorf("no token on admin: challenge %v, want scope agents.admin and admin's metadata", ch)
	}

	// Bad tokens: 401 invalid_token.
	adminAud := h.token(t, alice, []string{"mcp.tools"}, adminURL)
	noAud := h.token(t, alice, []string{"mcp.tools"})
	// Wrong issuer: a token of the exchange server, audience and subject right.
	_, out, err := idp.ExchangeRequest(context.Background(), as.URL+"/token", "pallasgw", asSecret, false, url.Values{
		"grant_type": {idp.GrantTokenExchange}, "subject_token": {aliceTools}, "subject_token_type": {idp.TokenTypeAccessToken}, "audience": {toolsURL}})
	foreign, _ := out["access_token"].(string)
	if err != nil || foreign == "" {
		t.Fatalf("exchanging for a foreign-issuer token: %v %v", err, out)
	}
	bad := map[string]string{
		"wrong audience":                adminAud,
		"no audience":                   noAud,
		"alg none":                      algNoneToken(aliceTools),
		"HS256 with the RSA public key": hsWithPublicKey(t, h, aliceTools),
		"unknown kid":                   foreignKeyToken(t, aliceTools),
		"malformed":                     "not-a-jwt",
		"bad signature":                 aliceTools[:len(aliceTools)-6] + "AAAAAA",
		"oversized":                     aliceTools + strings.Repeat("A", 64<<10),
		"wrong issuer":                  foreign,
	}
	for what, tok := range bad {
		secrets[what] = tok
		ch := refused(what, toolsURL, tok, http.StatusUnauthorized, "invalid_token")
		if ch["resource_metadata"] != metaURL {
			t.Errorf("%s: resource_metadata %q", what, ch["resource_metadata"])
		}
	}

	// Expired: a 1 s token past the 1 s clock skew.
	briefTok := h.token(t, brief, []string{"mcp.tools"}, toolsURL)
	secrets["the expired token"] = briefTok
	_, bc, _ := idp.Decode(briefTok)
	time.Sleep(time.Until(bc.Time("exp").Add(2500 * time.Millisecond)))
	refused("expired", toolsURL, briefTok, http.StatusUnauthorized, "invalid_token")

	// A scope the agent requires is missing: 403 insufficient_scope with
	// the scope; with it, the call goes through.
	adminNoScope := h.token(t, alice, []string{"mcp.tools"}, adminURL)
	ch = refused("missing scope", adminURL, adminNoScope, http.StatusForbidden, "insufficient_scope")
	if !slices.Contains(strings.Fields(ch["scope"]), "agents.admin") {
		t.Errorf("insufficient_scope challenge %v lacks scope agents.admin", ch)
	}
	adminTok := h.token(t, alice, []string{"mcp.tools", "agents.admin"}, adminURL)
	secrets["alice's admin token"] = adminTok
	if names := toolNames(t, mustSession(t, adminURL, adminTok)); len(names) != 2 {
		t.Errorf("admin with agents.admin: tools %v", names)
	}

	// Callers by claims: narrow-app (client_id, list form) loses echo;
	// stranger-app (groups dev only) falls to the default rule (no tools).
	narrowTok := h.token(t, narrow, []string{"mcp.tools"}, toolsURL)
	secrets["narrow's token"] = narrowTok
	ncs := mustSession(t, toolsURL, narrowTok)
	if names := toolNames(t, ncs); !slices.Equal(names, []string{"whoami"}) {
		t.Errorf("narrow-app sees %v, want only whoami", names)
	}
	if _, err := callTool(ncs, "echo", map[string]any{"message": "x"}); err == nil {
		t.Errorf("narrow-app called the denied echo")
	}
	if id := whoamiCall(t, ncs, "whoami"); id.Authorization != "none" {
		t.Errorf("narrow's whoami: %+v", id)
	}
	strangerTok := h.token(t, stranger, []string{"mcp.tools"}, toolsURL)
	secrets["stranger's token"] = strangerTok
	scs := mustSession(t, toolsURL, strangerTok)
	if names := toolNames(t, scs); len(names) != 0 {
		t.Errorf("stranger-app (default rule) sees %v, want none", names)
	}
	if _, err := callTool(scs, "whoami", nil); err == nil {
		t.Errorf("stranger-app called whoami")
	}

	// The static token works beside JWTs, on the agents it names.
	if names := toolNames(t, mustSession(t, toolsURL, svcToken)); len(names) != 2 {
		t.Errorf("static token svc sees %v", names)
	}
	if code, _, _ := rawMCP(t, adminURL, svcToken); code != http.StatusForbidden {
		t.Errorf("static token on an agent it does not name: %d, want 403", code)
	}

	// The audit log names JWT callers by their claims.
	// (The log is flushed each second: poll.)
	for _, who := range []string{"alice-app", "narrow-app"} {
		waitFor(t, "the gateway's log to name "+who, 10*time.Second, nil, func() error {
			if !strings.Contains(gw.Logs(), `"caller":"`+who+`"`) {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	}
	t.Logf("auth failures: %v", authFailures(t, gw))
	checkNotLogged(t, gw, secrets)
}

const exchangeConfig = `
name: e2e-token-exchange
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: jwt
  jwt:
    issuer: {{ISSUER}}
    jwks_url: {{ISSUER}}/.well-known/jwks.json
mcp:
  servers:
    plain: {transport: http, url: {{PLAIN}}}
    billing:
      transport: http
      url: {{BILLING}}
      token_exchange:
        token_url: {{AS}}/token
        client_id: pallasgw
        client_secret: ${PALLASGW_CLIENT_SECRET}
        audience: billing
        scopes: [billing.read]
agents:
  desk: {kind: proxy, servers: [plain, billing]}
`

// TestIdentityTokenExchange: a downstream with token_exchange gets a token
// the RFC 8693 server issued for it (its sub the caller's, its aud the
// configured audience, signed by the exchange server), never the caller's
// Hydra token; exchanged tokens are cached per caller; with the token
// endpoint down, a call that needs a new exchange fails with a clear error
// while cached callers and other servers go on.
func TestIdentityTokenExchange(t *testing.T) {
	h := startHydra(t)
	port := freePorts(t, 1)[0]
	deskURL := fmt.Sprintf("http://127.0.0.1:%d/agents/desk/mcp", port)
	var clients []hydraClient
	for _, name := range []string{"alice", "bob", "carol"} {
		c := hydraClient{ID: name + "-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: []string{deskURL}}
		h.createClient(t, c)
		clients = append(clients, c)
	}
	asSecret := randomHex(12)
	as := startExchangeAS(t, h, "pallasgw:"+asSecret)
	asKeys := &idp.KeySet{URL: as.URL + "/jwks.json"}
	plain, plainURL := startWhoami(t, nil)
	billing, billingURL := startWhoami(t, asKeys)
	cfg := strings.NewReplacer("{{ISSUER}}", h.Issuer, "{{AS}}", as.URL, "{{PLAIN}}", plainURL, "{{BILLING}}", billingURL).Replace(exchangeConfig)
	gw := startGatewayOn(t, port, cfg, "PALLASGW_CLIENT_SECRET="+asSecret)

	tokens := map[string]string{}
	sessions := map[string]*mcp.ClientSession{}
	for _, c := range clients {
		tokens[c.ID] = h.token(t, c, []string{"mcp.tools"}, deskURL)
		if c.ID != "carol-app" { // carol connects once the token endpoint is down (below)
			sessions[c.ID] = mustSession(t, deskURL, tokens[c.ID])
		}
	}
	secrets := map[string]string{"the exchange client secret": asSecret}
	for id, tok := range tokens {
		secrets[id+"'s token"] = tok
	}
	names := toolNames(t, sessions["alice-app"])
	for _, want := range []string{"plain__whoami", "billing__whoami", "billing__echo"} {
		if !slices.Contains(names, want) {
			t.Fatalf("desk's tools %v lack %s", names, want)
		}
	}
	// Exchanges per subject: whether listing tools already exchanges is
	// the gateway's choice; each caller needs exactly one either way.
	exchangesFor := func(sub string) (n int, last idp.Exchange) {
		for _, e := range as.stats(t).Recent {
			if e.Subject == sub {
				n, last = n+1, e
			}
		}
		return n, last
	}

	// alice: the billing downstream sees a token of the exchange server
	// for alice, meant for billing.
	id := whoamiCall(t, sessions["alice-app"], "billing__whoami")
	if id.Authorization != "bearer" || !id.Verified || id.Iss != as.URL || id.Sub != "alice-app" ||
		!slices.Equal(id.Aud, []string{"billing"}) || id.Actor != "pallasgw" || !slices.Equal(id.Scope, []string{"billing.read"}) {
		t.Errorf("billing saw %+v; want a verified exchange-server token for alice-app, aud billing, act pallasgw, scope billing.read", id)
	}
	if n, last := exchangesFor("alice-app"); n != 1 {
		t.Errorf("%d exchanges for alice-app after her first call, want 1", n)
	} else if last.Client != "pallasgw" || !slices.Equal(last.Audience, []string{"billing"}) || last.Scope != "billing.read" {
		t.Errorf("the exchange request: %+v", last)
	}
	// Cached: the same token again, no new exchange.
	again := whoamiCall(t, sessions["alice-app"], "billing__whoami")
	if again.Fingerprint != id.Fingerprint {
		t.Errorf("alice's second call carried another token: not cached")
	}
	if n, _ := exchangesFor("alice-app"); n != 1 {
		t.Errorf("alice's second call exchanged again (%d exchanges)", n)
	}
	// bob gets his own.
	bobID := whoamiCall(t, sessions["bob-app"], "billing__whoami")
	if bobID.Sub != "bob-app" || !bobID.Verified || bobID.Fingerprint == id.Fingerprint {
		t.Errorf("bob's billing call: %+v", bobID)
	}
	if n, _ := exchangesFor("bob-app"); n != 1 {
		t.Errorf("%d exchanges for bob-app, want 1", n)
	}
	t.Logf("exchange server: %d exchanges, %d refused", as.stats(t).Exchanges, as.stats(t).Refused)
	// The server without token_exchange gets nothing.
	if pid := whoamiCall(t, sessions["alice-app"], "plain__whoami"); pid.Authorization != "none" {
		t.Errorf("plain got credentials: %+v", pid)
	}

	// The token endpoint goes down: carol, who has no exchanged token yet,
	// connects only now (a 2026-07-28 client's server/discover reaches the
	// downstreams, so connecting earlier would have exchanged her token),
	// and gets a clear error for billing; her plain calls and alice's and
	// bob's cached billing calls go on.
	as.p.stop()
	sessions["carol-app"] = mustSession(t, deskURL, tokens["carol-app"])
	_, err := callTool(sessions["carol-app"], "billing__whoami", nil)
	if err == nil {
		t.Errorf("carol's billing call succeeded with the token endpoint down")
	} else if !strings.Contains(strings.ToLower(err.Error()), "exchange") {
		t.Errorf("carol's billing call failed without naming the token exchange: %v", err)
	} else {
		t.Logf("carol's billing call with the token endpoint down: %v", err)
	}
	if res, err := callTool(sessions["carol-app"], "plain__echo", map[string]any{"message": "still here"}); err != nil || !strings.Contains(jsonString(res.StructuredContent), "still here") {
		t.Errorf("carol's plain call after the exchange failure: %v %v", err, res)
	}
	if again := whoamiCall(t, sessions["alice-app"], "billing__whoami"); again.Fingerprint != id.Fingerprint || again.Sub != "alice-app" {
		t.Errorf("alice's cached billing call with the token endpoint down: %+v", again)
	}
	if again := whoamiCall(t, sessions["bob-app"], "billing__whoami"); again.Sub != "bob-app" {
		t.Errorf("bob's cached billing call with the token endpoint down: %+v", again)
	}

	// No caller's token ever reached a downstream; billing got only tokens
	// of the exchange server.
	for _, w := range []*idp.Whoami{plain, billing} {
		for _, v := range w.Seen() {
			for who, tok := range tokens {
				if strings.Contains(v, tok) {
					t.Errorf("a downstream received %s's Hydra token", who)
				}
			}
		}
	}
	for i, v := range billing.Seen() {
		if v == "" {
			continue
		}
		tok := strings.TrimPrefix(v, "Bearer ")
		secrets[fmt.Sprintf("exchanged token %d", i)] = tok
		if _, c, err := idp.Decode(tok); err != nil || c.String("iss") != as.URL {
			t.Errorf("billing received a token not issued by the exchange server (iss %q)", c.String("iss"))
		}
	}
	for _, v := range plain.Seen() {
		if v != "" {
			t.Errorf("plain received an Authorization header")
			break
		}
	}
	checkNotLogged(t, gw, secrets)
}
