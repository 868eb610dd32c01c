package config

import (
	"strings"
	"testing"
)

// A downstream header whose ${VAR:-} expanded to nothing (what pallasgw
// import writes for every reference) is a warning naming the header and
// the variable; a header with its credential is not.
func TestEmptyCredentialWarned(t *testing.T) {
	t.Setenv("PGW_SET_TOKEN", "set-token-1234")
	t.Setenv("PGW_BLANK_TOKEN", "")
	c, err := Parse("t.yaml", []byte(`
name: t
mcp:
  servers:
    a:
      url: "http://127.0.0.1:1/mcp"
      headers:
        Authorization: "Bearer ${PGW_UNSET_TOKEN:-}"
        X-Api-Key: ${PGW_BLANK_TOKEN:-}
    b: {url: "http://127.0.0.1:1/mcp", headers: {Authorization: "Bearer ${PGW_SET_TOKEN:-}"}}
    c: {url: "http://127.0.0.1:1/mcp", headers: {Authorization: "Bearer ${PGW_UNSET_TOKEN:-fallback-1234}"}}
agents:
  x: {model: passthrough}
`))
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(c.Warnings, "\n")
	for _, want := range []string{
		"t.yaml:8: mcp.servers.a.headers.Authorization: ${PGW_UNSET_TOKEN} is empty or unset, so header Authorization has no credential and is not sent",
		"t.yaml:9: mcp.servers.a.headers.X-Api-Key: ${PGW_BLANK_TOKEN} is empty or unset",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if strings.Contains(warnings, "servers.b") || strings.Contains(warnings, "servers.c") || strings.Contains(warnings, "set-token") {
		t.Errorf("warnings name a header that has its credential:\n%s", warnings)
	}
}

func TestEmptyCredential(t *testing.T) {
	for _, tt := range []struct {
		name, v string
		want    bool
	}{
		{"Authorization", "", true}, {"X-Api-Key", "  ", true}, {"Authorization", "Bearer", true}, {"authorization", "Bearer ", true},
		{"Proxy-Authorization", "basic ", true}, {"Authorization", "Bearer x", false}, {"Authorization", "token-1234", false},
		{"Authorization", "Bearerx", false}, {"X-Auth-Scheme", "Bearer", false}, {"X-Mode", "token", false},
	} {
		if got := EmptyCredential(tt.name, tt.v); got != tt.want {
			t.Errorf("EmptyCredential(%q, %q) = %v, want %v", tt.name, tt.v, got, tt.want)
		}
	}
}
