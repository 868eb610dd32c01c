//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/test/idp"
)

// oauthRig is what the upstream OAuth tests stand on: Ory Hydra for the
// authorization code grant (hydraAuthCode), a whoami server that verifies
// Hydra's tokens and reports whose they are, and the downstream: a second
// pallasgw in auth mode jwt with Hydra's issuer (it answers 401 with its
// protected resource metadata), whose agent "tools" proxies whoami with
// the caller's token.
type oauthRig struct {
	hydra   *hydraAuthCode
	who     *idp.Whoami
	down    *gateway
	downURL string // the downstream agent's MCP URL: the server team of a gateway under test
}

// startOAuthRig starts the rig, Hydra's access tokens living ttl; front
// (nil: none) is a TCP proxy Hydra's public port is reached through.
func startOAuthRig(t *testing.T, ttl string, front *tcpProxy) *oauthRig {
	t.Helper()
	r := &oauthRig{hydra: startHydraAuthCodeBehind(t, ttl, front)}
	var whoURL string
	r.who, whoURL = startWhoami(t, &idp.KeySet{URL: r.hydra.Issuer + "/.well-known/jwks.json"})
	port := freePorts(t, 1)[0]
	r.downURL = fmt.Sprintf("http://127.0.0.1:%d/agents/tools/mcp", port)
	r.down = startGatewayOn(t, port, strings.NewReplacer("{{ISSUER}}", r.hydra.Issuer, "{{WHOAMI}}", whoURL).Replace(`
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
	return r
}

// config is a gateway under test's config named name: auth mode tokens
// with a caller per name of callers (its token in ${<NAME>_TOKEN}),
// credentials.key ${CREDENTIALS_KEY}, the server team (the downstream, with
// oauth), the lines of top (public_url and the like) and those of
// agentsYAML under agents.
func (r *oauthRig) config(name, top string, callers []string, agentsYAML string) string {
	var tokens strings.Builder
	for _, c := range callers {
		fmt.Fprintf(&tokens, "    - {name: %s, token: ${%s_TOKEN}}\n", c, strings.ToUpper(c))
	}
	return fmt.Sprintf(`
name: %s
listen: "127.0.0.1:{{PORT}}"
%s
auth:
  mode: tokens
  tokens:
%scredentials: {key: ${CREDENTIALS_KEY}}
mcp:
  servers:
    team:
      url: %s
      oauth: {audience: %s}
agents:
%s
`, name, strings.TrimSpace(top), tokens.String(), r.downURL, r.downURL, agentsYAML)
}

// credentialsKey is a random credentials.key.
func credentialsKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// connectFromList connects subject's account in its browser at the
// gateway base: the sign-in with token on the list page, then its Connect
// button, Hydra's login and consent, the callback.
func connectFromList(t *testing.T, base, subject, token string) *http.Client {
	t.Helper()
	b := person(t, subject)
	_, body := browse(t, b, http.MethodGet, base+"/connect/", nil)
	if code, body := browse(t, b, http.MethodPost, base+"/connect/signin", url.Values{"token": {token}, "next": {"/connect/"}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK {
		t.Fatalf("%s signs in: %d %s", subject, code, body)
	}
	if code, body := browse(t, b, http.MethodPost, base+"/connect/start", url.Values{"server": {"team"}}); code != http.StatusOK || !strings.Contains(body, "Connected to team") {
		t.Fatalf("%s connects: %d %s", subject, code, body)
	}
	return b
}

// connectFromLink connects subject's account in a browser of its own from
// link, a connect URL of the gateway at base: the sign-in with token, then
// the flow.
func connectFromLink(t *testing.T, base, subject, token, link string) {
	t.Helper()
	b := person(t, subject)
	_, body := browse(t, b, http.MethodGet, link, nil)
	if code, body := browse(t, b, http.MethodPost, base+"/connect/signin", url.Values{"token": {token},
		"next": {strings.TrimPrefix(link, base)}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK || !strings.Contains(body, "Connected to team") {
		t.Errorf("%s connects: %d %s", subject, code, body)
	}
}

// noTokensIn fails t for every secret found in texts (where → text): the
// callers' gateway tokens, Hydra's refresh tokens and codes (ory_rt_,
// ory_ac_), and each Bearer value the downstream received (seen; of a JWT,
// its signature: what makes it usable).
func noTokensIn(t *testing.T, texts map[string]string, tokens, seen []string) {
	t.Helper()
	for where, text := range texts {
		for _, needle := range append(append([]string{"ory_rt_", "ory_ac_"}, tokens...), seen...) {
			n := strings.TrimPrefix(needle, "Bearer ")
			if parts := strings.Split(n, "."); len(parts) == 3 {
				n = parts[2]
			}
			if n != "" && strings.Contains(text, n) {
				t.Errorf("the gateway's %s holds a token (%.12s…)", where, n)
			}
		}
	}
}
