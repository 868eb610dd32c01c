package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// /-/status shows the serving config's warnings.
func TestStatusShowsWarnings(t *testing.T) {
	g := newTestGateway(t, revertCfg+"policy:\n  callers:\n    bobb: {agents: [echo]}\n")
	rec := httptest.NewRecorder()
	g.statusHandler(rec, httptest.NewRequest("GET", "/-/status", nil))
	var st struct{ Warnings []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], `policy.callers.bobb: in auth mode passthrough a rule is named by the agent_id a toolbox caller sends, and no agent is a toolbox`) {
		t.Fatalf("warnings %q", st.Warnings)
	}
}

// /-/status (and so get_gateway_status) shows the policy state: the caller
// rules, the default rule, deny_on_missing_identity, and each server's
// transport and address; never a credential: not a header, not a URL's
// userinfo or query, not an environment value in its path, not a stdio
// server's arguments or environment.
func TestStatusShowsPolicyWithoutSecrets(t *testing.T) {
	t.Setenv("PATH_TOKEN", "path-secret-7777")
	g := newTestGateway(t, `
name: t
listen: "127.0.0.1:0"
auth:
  mode: jwt
  jwt: {issuer: "https://idp.example.com", jwks_url: "http://127.0.0.1:1/jwks"}
mcp:
  servers:
    files: {url: "http://user:userinfo-secret-1111@127.0.0.1:1/mcp?api_key=query-secret-2222#frag", headers: {Authorization: "Bearer header-secret-3333"}}
    wiki: {transport: sse, url: "http://127.0.0.1:2/t/${PATH_TOKEN}/sse"}
    local: {command: /usr/bin/env, args: ["--token", "arg-secret-4444"], env: {TOKEN: env-secret-5555}}
policy:
  deny_on_missing_identity: true
  default: {agents: [echo], tools: {deny: ["*delete*"]}}
  callers:
    ops: {match: {groups: person-claim-6666}, servers: [files], limits: {requests_per_minute: 60}}
agents:
  echo: {model: passthrough}
`)
	rec := httptest.NewRecorder()
	g.statusHandler(rec, httptest.NewRequest("GET", "/-/status", nil))
	body := rec.Body.String()
	var st struct {
		Policy struct {
			Callers map[string]struct {
				MatchClaims []string `json:"match_claims"`
				Servers     []string
				Limits      struct {
					RequestsPerMinute int `json:"requests_per_minute"`
				}
			}
			Default *struct {
				Agents []string
				Tools  struct{ Deny []string }
			}
			DenyOnMissingIdentity bool `json:"deny_on_missing_identity"`
		}
		Servers []struct{ Name, Transport, URL, Command string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	ops := st.Policy.Callers["ops"]
	if !st.Policy.DenyOnMissingIdentity || st.Policy.Default == nil || st.Policy.Default.Agents[0] != "echo" || st.Policy.Default.Tools.Deny[0] != "*delete*" ||
		len(ops.MatchClaims) != 1 || ops.MatchClaims[0] != "groups" || ops.Servers[0] != "files" || ops.Limits.RequestsPerMinute != 60 {
		t.Errorf("policy %+v", st.Policy)
	}
	want := map[string]string{
		"files": "http http://127.0.0.1:1/mcp ",
		"local": "stdio  env",
		"wiki":  "sse http://127.0.0.1:2/t/%3Credacted%3E/sse ",
	}
	for _, s := range st.Servers {
		if got := s.Transport + " " + s.URL + " " + s.Command; got != want[s.Name] {
			t.Errorf("server %s: %q, want %q", s.Name, got, want[s.Name])
		}
		delete(want, s.Name)
	}
	if len(want) != 0 {
		t.Errorf("servers missing: %v", want)
	}
	for _, secret := range []string{"userinfo-secret", "query-secret", "api_key", "header-secret", "path-secret", "arg-secret", "env-secret", "person-claim"} {
		if strings.Contains(body, secret) {
			t.Errorf("the status shows %q:\n%s", secret, body)
		}
	}
}
