//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// discoveryConfig has a secret in every place a config holds one; the
// cards and the catalog must carry none of them. Arguments: echo's legacy
// port, the registry port, the version.
const discoveryConfig = `
name: discovery
version: "%[3]s"
namespace: com.example.discovery
listen: "127.0.0.1:{{PORT}}"
registry_port: %[2]d
admin: {token: admin-SECRET-0001}
models:
  default: passthrough
  providers:
    openai: {base_url: "http://127.0.0.1:9/v1", api_key: sk-SECRET-0002}
mcp:
  servers:
    web: {url: "http://127.0.0.1:9/mcp", headers: {X-Api-Key: hdr-SECRET-0003}}
agents:
  echo:
    title: Echo Agent
    description: Answers with your own message.
    port: %[1]d
    instruction: "keep instr-SECRET-0004 to yourself"
  tools: {kind: proxy, servers: [web]}
`

type discoveryAnswer struct {
	status int
	header http.Header
	body   string
}

func discoveryGet(t *testing.T, url string, hdr map[string]string) discoveryAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return discoveryAnswer{resp.StatusCode, resp.Header, string(b)}
}

// TestServerCardAndCatalog: each agent's card at <MCP URL>/server-card and
// the AI catalog listing them, on the real binary: media types, CORS, ETag
// and 304, 404 for an unknown agent, no secret, no auth even when the
// agents need a token, a reload changes them, the legacy agent port serves
// its card and the legacy registry port is unchanged.
func TestServerCardAndCatalog(t *testing.T) {
	ports := freePorts(t, 2)
	gw := startGateway(t, fmt.Sprintf(discoveryConfig, ports[0], ports[1], "1.0.0"))
	cardURL := gw.Base + "/agents/echo/mcp/server-card"

	a := discoveryGet(t, cardURL, map[string]string{"Accept": "application/mcp-server-card+json", "Origin": "https://evil.example.com"})
	if a.status != 200 || a.header.Get("Content-Type") != "application/mcp-server-card+json" ||
		a.header.Get("Access-Control-Allow-Origin") != "*" || a.header.Get("ETag") == "" {
		t.Fatalf("card: %d %v\n%s", a.status, a.header, a.body)
	}
	var card struct{ Remotes []struct{ Type, URL string } }
	var raw map[string]any
	if err := json.Unmarshal([]byte(a.body), &raw); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(a.body), &card)
	if raw["$schema"] != "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json" ||
		raw["name"] != "com.example.discovery/echo" || raw["title"] != "Echo Agent" || raw["version"] != "1.0.0" ||
		len(card.Remotes) != 1 || card.Remotes[0].Type != "streamable-http" || card.Remotes[0].URL != gw.Base+"/agents/echo/mcp" {
		t.Errorf("card content:\n%s", a.body)
	}
	if b := discoveryGet(t, cardURL, map[string]string{"If-None-Match": a.header.Get("ETag")}); b.status != 304 || b.body != "" {
		t.Errorf("If-None-Match with the ETag: %d %q", b.status, b.body)
	}
	if b := discoveryGet(t, cardURL, map[string]string{"If-None-Match": `"other"`}); b.status != 200 || b.body != a.body {
		t.Errorf("If-None-Match with another tag: %d", b.status)
	}
	if b := discoveryGet(t, gw.Base+"/agents/nobody/mcp/server-card", nil); b.status != 404 ||
		!strings.Contains(b.body, `unknown agent \"nobody\"`) || !strings.HasPrefix(b.header.Get("Content-Type"), "application/json") {
		t.Errorf("unknown agent: %d %q", b.status, b.body)
	}

	cat := discoveryGet(t, gw.Base+"/.well-known/ai-catalog.json", nil)
	if cat.status != 200 || cat.header.Get("Content-Type") != "application/ai-catalog+json" || cat.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("catalog: %d %v\n%s", cat.status, cat.header, cat.body)
	}
	var catalog struct {
		SpecVersion string
		Entries     []struct {
			Identifier, Type, URL string
			Extensions            map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(cat.body), &catalog); err != nil {
		t.Fatal(err)
	}
	if len(catalog.Entries) != 2 || catalog.Entries[0].URL != cardURL || catalog.Entries[0].Type != "application/mcp-server-card+json" ||
		catalog.Entries[0].Identifier != "urn:air:127.0.0.1:mcp:echo" || catalog.Entries[1].URL != gw.Base+"/agents/tools/mcp/server-card" {
		t.Errorf("catalog:\n%s", cat.body)
	}
	var embedded map[string]any
	json.Unmarshal(catalog.Entries[0].Extensions["pallasgw/server-card"], &embedded)
	if fmt.Sprint(embedded) != fmt.Sprint(raw) {
		t.Errorf("the catalog's copy of echo's card differs from the card:\n%v\n%v", embedded, raw)
	}

	legacy := discoveryGet(t, fmt.Sprintf("http://127.0.0.1:%d/mcp/server-card", ports[0]), nil)
	if legacy.status != 200 || !strings.Contains(legacy.body, fmt.Sprintf(`"url": "http://127.0.0.1:%d/mcp"`, ports[0])) {
		t.Errorf("legacy port card: %d\n%s", legacy.status, legacy.body)
	}
	reg := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if r := discoveryGet(t, reg+"/.well-known/mcp/server.json", nil); r.status != 200 || !strings.Contains(r.body, `"servers"`) {
		t.Errorf("legacy registry: %d", r.status)
	}
	if r := discoveryGet(t, reg+"/.well-known/ai-catalog.json", nil); r.status != 404 {
		t.Errorf("the legacy registry port serves the catalog: %d", r.status)
	}

	all := a.body + cat.body + legacy.body
	for _, s := range []string{"SECRET", "127.0.0.1:9", "instr-"} {
		if strings.Contains(all, s) {
			t.Errorf("%q appears in a card or the catalog", s)
		}
	}

	// Hot reload: a new version and auth by token change the card (and its
	// ETag); the card stays public while the agent needs a token.
	if err := gw.WriteConfig(fmt.Sprintf(discoveryConfig, ports[0], ports[1], "1.1.0") + `
auth:
  mode: tokens
  tokens: [{name: ui, token: tok-SECRET-0005-long-enough, agents: ["*"]}]
`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	var after discoveryAnswer
	for {
		after = discoveryGet(t, cardURL, map[string]string{"If-None-Match": a.header.Get("ETag")})
		if after.status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if after.status != 200 || !strings.Contains(after.body, `"version": "1.1.0"`) || !strings.Contains(after.body, `"isSecret": true`) ||
		after.header.Get("ETag") == a.header.Get("ETag") || strings.Contains(after.body, "SECRET") {
		t.Errorf("after the reload: %d %s\n%s", after.status, after.header.Get("ETag"), after.body)
	}
	if r := discoveryGet(t, gw.Base+"/agents/echo/mcp", nil); r.status != 401 {
		t.Errorf("the agent itself should need the token now: %d", r.status)
	}
}
