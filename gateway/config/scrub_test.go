package config

import (
	"slices"
	"strings"
	"testing"
)

// A typo (no space after the colon) makes an expanded secret part of a
// key; the error names the key by its part before the colon, never the
// value (nor the variable's text).
func TestErrorsNeverCarryExpandedValues(t *testing.T) {
	t.Setenv("PGW_TEST_KEY", "sk-SECRET-0001")
	t.Setenv("PGW_TEST_TOKEN", "tok-SECRET-0002")
	t.Setenv("PGW_TEST_HDR", "hdr-SECRET-0003")
	for _, c := range []struct{ name, yaml, want string }{
		{"api_key", "name: t\nmodels:\n  providers:\n    openai: {base_url: \"http://x\", api_key:${PGW_TEST_KEY}}\n",
			`p.yaml:4: models.providers.openai: unknown key "api_key:…": a key needs a space after its colon (api_key: ...)`},
		{"token", "name: t\nauth:\n  mode: tokens\n  tokens:\n    - {name: web, token:${PGW_TEST_TOKEN}}\n",
			`p.yaml:5: auth.tokens.0: unknown key "token:…": a key needs a space after its colon (token: ...)`},
		{"header, flow", "name: t\nmcp:\n  servers:\n    s:\n      url: http://x/mcp\n      headers: {X-Api-Key:${PGW_TEST_HDR}}\n",
			"p.yaml:6: mcp.servers.s.headers.X-Api-Key:…: not a valid header name"},
		{"header, block", "name: t\nmcp:\n  servers:\n    s:\n      url: http://x/mcp\n      headers:\n        X-Api-Key:${PGW_TEST_HDR}: v\n",
			"p.yaml:7: mcp.servers.s.headers.X-Api-Key:…: not a valid header name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A check of another package (the gateway's header rules)
			// reports with the key as decoded.
			check := func(cfg *Config, report func([]string, string)) {
				for name, srv := range cfg.MCP.Servers {
					for k := range srv.Headers {
						if strings.Contains(k, ":") {
							report([]string{"mcp", "servers", name, "headers", k}, "not a valid header name")
						}
					}
				}
			}
			_, err := Parse("p.yaml", []byte(c.yaml), check)
			if err == nil {
				t.Fatal("loaded")
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error carries the secret: %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// Each server knows which of its values came from ${VAR} expansion (its
// args included), for the downstream client to take out of the server's
// stderr lines and errors; values expanded elsewhere are not its.
func TestServerExpandedValues(t *testing.T) {
	t.Setenv("PGW_K9", "ARGSECRET9")
	t.Setenv("PGW_K7", "ENVSECRET7")
	t.Setenv("PGW_K8", "URLSECRET8")
	t.Setenv("PGW_BIN", "/usr/bin/node")
	t.Setenv("PGW_OTHER", "other-SECRET-0004")
	t.Setenv("PGW_SHORT", "on")
	c, err := Parse("p.yaml", []byte(`name: t
models:
  providers:
    p: {type: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${PGW_OTHER}"}
mcp:
  servers:
    local:
      command: ${PGW_BIN}
      args: ["-e", "console.error(process.argv)", "--", "tok=${PGW_K9}", "${PGW_SHORT}"]
      env: {MY_TOKEN: "${PGW_K7}"}
    hosted:
      url: "http://127.0.0.1:1/mcp?key=${PGW_K8}"
agents:
  a: {kind: proxy, servers: [local, hosted]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"local":  {"/usr/bin/node", "ARGSECRET9", "ENVSECRET7"},
		"hosted": {"URLSECRET8"},
	} {
		if got := c.MCP.Servers[name].Expanded(); !slices.Equal(got, want) {
			t.Errorf("%s: Expanded() = %q, want %q", name, got, want)
		}
	}
}
