//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const tsOAuthConfig = `
name: e2e-ts-oauth
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: jwt
  jwt:
    issuer: {{ISSUER}}
    clock_skew: 1s
    scopes: {"tools": [mcp.tools]}
mcp:
  servers:
    whoami: {transport: http, url: {{WHOAMI}}}
agents:
  tools: {kind: proxy, servers: [whoami]}
`

// tsEvent is one JSON line of test/e2e/ts/oauth-client.mjs.
type tsEvent struct {
	Event  string            `json:"event"`
	Method string            `json:"method"`
	URL    string            `json:"url"`
	Status int               `json:"status"`
	Form   map[string]string `json:"form"`
	Issuer string            `json:"issuer"`
	Claims map[string]any    `json:"claims"`
	Names  []string          `json:"names"`
	Text   string            `json:"text"`
	Error  string            `json:"error"`
	// connected
	ServerName string `json:"serverName"`
	IsError    bool   `json:"isError"`
}

func parseTSEvents(t *testing.T, lines []string) []tsEvent {
	t.Helper()
	var out []tsEvent
	for _, l := range lines {
		var e tsEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("oauth-client.mjs printed %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// gwLogLine is one line of the gateway's JSON log.
type gwLogLine struct {
	Msg      string `json:"msg"`
	Agent    string `json:"agent"`
	Reason   string `json:"reason"`
	Caller   string `json:"caller"`
	Decision string `json:"decision"`
}

// authTrail is the gateway's "authentication refused" reasons and the
// allowed callers of agent, in log order ("refused:<reason>",
// "allow:<caller>").
func authTrail(logs, agent string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l gwLogLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Agent != agent {
			continue
		}
		switch {
		case l.Msg == "authentication refused":
			out = append(out, "refused:"+l.Reason)
		case l.Msg == "policy decision" && l.Decision == "allow" && l.Caller != "":
			out = append(out, "allow:"+l.Caller)
		}
	}
	return out
}

// TestIdentityTypeScriptOAuth: the TypeScript MCP SDK's client auth
// (@modelcontextprotocol/sdk, ClientCredentialsProvider of
// client/auth-extensions) does the OAuth dance against a gateway in
// auth.mode jwt and Ory Hydra, from no token at all: 401 → the protected
// resource metadata named by resource_metadata → Hydra's metadata (the SDK
// tries RFC 8414 first, Hydra answers 404, then OpenID discovery) → the
// client-credentials grant at the token endpoint it discovered → the MCP
// session, tools/list and tools/call.
//
// The SDK names the resource with RFC 8707 `resource` (the metadata's
// resource, the agent's URL); Hydra v2.3.0 ignores `resource` and puts only
// its `audience` parameter in aud, so the SDK's provider as it is gets a
// token with aud [], which the gateway refuses (401 invalid_token, "aud
// claim is required"; checked below). With the provider's token request also
// sending the resource as `audience` (the SDK's addClientAuthentication
// hook) and the agent's URL in the Hydra client's allowed audiences, the
// dance succeeds with the gateway's default audiences.
func TestIdentityTypeScriptOAuth(t *testing.T) {
	h := startHydra(t)
	port := freePorts(t, 1)[0]
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	toolsURL := base + "/agents/tools/mcp"
	metaURL := base + "/.well-known/oauth-protected-resource/agents/tools/mcp"
	app := hydraClient{ID: "ts-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: []string{toolsURL}}
	plain := hydraClient{ID: "ts-plain-app", Secret: randomHex(12), Scopes: []string{"mcp.tools"}, Audiences: []string{toolsURL}}
	h.createClient(t, app)
	h.createClient(t, plain)
	_, whoamiURL := startWhoami(t, nil)
	cfg := strings.NewReplacer("{{ISSUER}}", h.Issuer, "{{WHOAMI}}", whoamiURL).Replace(tsOAuthConfig)
	gw := startGatewayOn(t, port, cfg)

	run := func(c hydraClient, mode string) []tsEvent {
		t.Helper()
		t.Setenv("TS_OAUTH_CLIENT_SECRET", c.Secret)
		lines := runNodeScript(t, 2*time.Minute, "oauth-client.mjs", toolsURL, c.ID, h.Issuer, "mcp.tools", mode,
			"echo", `{"message":"hello from the TypeScript SDK"}`)
		for _, l := range lines {
			t.Logf("%s: %s", mode, l)
		}
		return parseTSEvents(t, lines)
	}

	// The dance, with the resource sent as Hydra's audience too.
	events := run(app, "audience")
	var reqs []string
	var tokenForm map[string]string
	var token *tsEvent
	var names []string
	var result *tsEvent
	for i, e := range events {
		switch e.Event {
		case "http":
			reqs = append(reqs, fmt.Sprintf("%s %s %d", e.Method, e.URL, e.Status))
			if e.URL == h.Issuer+"/oauth2/token" {
				tokenForm = e.Form
			}
		case "token":
			token = &events[i]
		case "tools":
			names = e.Names
		case "result":
			result = &events[i]
		case "error":
			t.Fatalf("the SDK failed: %s", e.Error)
		}
	}
	// The requests of the dance, in order: the SDK found every URL itself.
	want := []string{
		"POST " + toolsURL + " 401",
		"GET " + metaURL + " 200",
		"GET " + h.Issuer + "/.well-known/oauth-authorization-server 404",
		"GET " + h.Issuer + "/.well-known/openid-configuration 200",
		"POST " + h.Issuer + "/oauth2/token 200",
		"POST " + toolsURL + " 200",
	}
	if len(reqs) < len(want) || !slices.Equal(reqs[:len(want)], want) {
		t.Errorf("the SDK's requests:\n  %s\nwant them to start with:\n  %s", strings.Join(reqs, "\n  "), strings.Join(want, "\n  "))
	}
	for _, r := range reqs[min(len(want), len(reqs)):] {
		if strings.Contains(r, h.Issuer) || strings.HasSuffix(r, " 401") {
			t.Errorf("after the session started: %s", r)
		}
	}
	if tokenForm["grant_type"] != "client_credentials" || tokenForm["scope"] != "mcp.tools" ||
		tokenForm["resource"] != toolsURL || tokenForm["audience"] != toolsURL {
		t.Errorf("token request %v, want client_credentials, scope mcp.tools, resource and audience %s", tokenForm, toolsURL)
	}
	if _, ok := tokenForm["client_secret"]; ok {
		t.Errorf("the secret went in the form, not client_secret_basic: %v", tokenForm)
	}
	if token == nil || token.Issuer != h.Issuer || token.Claims["client_id"] != "ts-app" || token.Claims["iss"] != h.Issuer ||
		jsonString(token.Claims["aud"]) != jsonString([]string{toolsURL}) || jsonString(token.Claims["scp"]) != `["mcp.tools"]` {
		t.Errorf("the SDK's token: %+v", token)
	}
	if !slices.Contains(names, "whoami") || !slices.Contains(names, "echo") {
		t.Errorf("tools %v, want whoami and echo", names)
	}
	if result == nil || result.IsError || !strings.Contains(result.Text, "hello from the TypeScript SDK") {
		t.Errorf("echo: %+v", result)
	}

	// The SDK's provider as it is: `resource` only, which Hydra ignores.
	events = run(plain, "plain")
	var plainToken *tsEvent
	var plainErr string
	reqs = nil
	for i, e := range events {
		switch e.Event {
		case "http":
			reqs = append(reqs, fmt.Sprintf("%s %s %d", e.Method, e.URL, e.Status))
			if e.URL == h.Issuer+"/oauth2/token" {
				tokenForm = e.Form
			}
		case "token":
			plainToken = &events[i]
		case "error":
			plainErr = e.Error
		case "tools", "result":
			t.Errorf("plain provider: unexpected %+v", e)
		}
	}
	if tokenForm["resource"] != toolsURL || tokenForm["audience"] != "" {
		t.Errorf("plain provider's token request %v, want resource %s and no audience", tokenForm, toolsURL)
	}
	if plainToken == nil || jsonString(plainToken.Claims["aud"]) != "[]" {
		t.Errorf("plain provider's token: %+v, want aud [] (Hydra ignores resource)", plainToken)
	}
	if !strings.Contains(plainErr, "401 after successful authentication") {
		t.Errorf("plain provider: error %q, want the SDK's 401 after successful authentication", plainErr)
	}
	if n := len(reqs); n == 0 || reqs[n-1] != "POST "+toolsURL+" 401" {
		t.Errorf("plain provider's requests: %v", reqs)
	}

	// The gateway's log: for ts-app a 401 (no token), then its calls; for
	// the plain provider 401 (no token), then 401 invalid_token (no aud).
	var trail []string
	waitFor(t, "the gateway's log to show the dance", 10*time.Second, nil, func() error {
		trail = authTrail(gw.Logs(), "tools")
		if !slices.Contains(trail, "refused:invalid_token") {
			return fmt.Errorf("not yet: %v", trail)
		}
		return nil
	})
	t.Logf("gateway auth trail for agent tools: %v", trail)
	first := slices.Index(trail, "allow:ts-app")
	if first < 1 || trail[first-1] != "refused:missing_token" {
		t.Fatalf("gateway log %v: want ts-app's calls right after a missing_token 401", trail)
	}
	rest := trail[first:]
	for len(rest) > 0 && rest[0] == "allow:ts-app" {
		rest = rest[1:]
	}
	if !slices.Equal(rest, []string{"refused:missing_token", "refused:invalid_token"}) {
		t.Errorf("gateway log %v: want only ts-app's calls, then the plain provider's missing_token and invalid_token", trail)
	}
	if !strings.Contains(gw.Logs(), "aud claim is required") {
		t.Errorf("the gateway's log does not say the plain provider's token lacked aud")
	}
	for _, l := range trail[first:] {
		if strings.HasPrefix(l, "allow:") && l != "allow:ts-app" {
			t.Errorf("gateway log %v: a caller other than ts-app was allowed", trail)
		}
	}
	checkNotLogged(t, gw, map[string]string{"ts-app's secret": app.Secret, "ts-plain-app's secret": plain.Secret})
}
