package registry

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// secrets are planted in every secret-bearing place of the config; no card
// and no catalog may carry any of them.
var secrets = []string{"sk-openai-SECRET-1", "sk-ant-SECRET-2", "hdr-SECRET-3", "tok-SECRET-4-long-enough", "admin-SECRET-5", "env-SECRET-6", "fwd-SECRET-7", "arg-SECRET-8"}

const secretConfig = `
name: cards
version: "2.3.4"
namespace: com.example.cards
auth:
  mode: tokens
  tokens:
    - {name: ui, token: tok-SECRET-4-long-enough, agents: ["*"]}
admin: {token: admin-SECRET-5}
models:
  default: openai.gpt-x
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1", api_key: sk-openai-SECRET-1}
    anthropic: {api_key: sk-ant-SECRET-2}
  capabilities:
    openai.gpt-x: {vision: true, context_window: 128000, max_output_tokens: 4096}
mcp:
  servers:
    web:
      url: http://127.0.0.1:2/mcp
      headers: {X-Api-Key: hdr-SECRET-3}
    files:
      transport: stdio
      command: /bin/true
      args: [arg-SECRET-8]
      env: {TOKEN: env-SECRET-6}
agents:
  tech_research:
    description: Web search and notes
    icons: [{src: "https://example.com/r.svg", sizes: "48x48 96x96", mime_type: image/svg+xml}]
    instruction: "never reveal fwd-SECRET-7"
    servers: [web, files]
  tools: {kind: proxy, servers: [web]}
`

func loadCards(t *testing.T) *Registry {
	t.Helper()
	c, err := config.Parse("cards.yaml", []byte(secretConfig))
	if err != nil {
		t.Fatal(err)
	}
	return New(c, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
}

func TestCard(t *testing.T) {
	r := loadCards(t)
	body, etag, ok := r.CardJSON("tech_research", "https://gw.example.com/agents/tech_research/mcp")
	if !ok {
		t.Fatal("no card for tech_research")
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json",
  "name": "com.example.cards/tech-research",
  "version": "2.3.4",
  "description": "Web search and notes",
  "title": "Tech Research",
  "icons": [{"src": "https://example.com/r.svg", "mimeType": "image/svg+xml", "sizes": ["48x48", "96x96"]}],
  "remotes": [{
    "type": "streamable-http",
    "url": "https://gw.example.com/agents/tech_research/mcp",
    "headers": [{"name": "Authorization", "description": "Bearer token issued by the gateway's operator", "isRequired": true, "isSecret": true}],
    "supportedProtocolVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
  }],
  "_meta": {"pallasgw/model": {"model": "gpt-x", "vision": true, "context_window": 128000, "max_output_tokens": 4096}}
}`
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(got); string(g) != string(must(json.Marshal(w))) {
		t.Errorf("card:\n%s\nwant:\n%s", body, want)
	}
	if etag != ETag(body) || !strings.HasPrefix(etag, `"`) || len(etag) != 34 {
		t.Errorf("etag %s", etag)
	}
	if _, _, ok := r.CardJSON("nobody", "x"); ok {
		t.Error("a card for an unknown agent")
	}
	// No description: the title stands in (the schema requires one).
	c, _ := r.Card("tools", "u")
	if c.Description != "Tools" || c.Meta != nil {
		t.Errorf("proxy card: %+v", c)
	}
}

func TestCardsCarryNoSecret(t *testing.T) {
	r := loadCards(t)
	var all []byte
	for _, a := range []string{"tech_research", "tools"} {
		b, _, _ := r.CardJSON(a, "http://h/agents/"+a+"/mcp")
		all = append(all, b...)
	}
	cat, _ := r.CatalogJSON("http://h", func(a string) string { return "http://h/agents/" + a + "/mcp" },
		func(a string) string { return "http://h/agents/" + a + "/mcp/server-card" })
	all = append(all, cat...)
	for _, s := range append(secrets, "SECRET", "127.0.0.1:1", "127.0.0.1:2", "/bin/true", "instruction") {
		if strings.Contains(string(all), s) {
			t.Errorf("%q appears in a card or the catalog", s)
		}
	}
}

func TestCatalog(t *testing.T) {
	r := loadCards(t)
	cat := r.Catalog("https://Agents.Example.com:8443", func(a string) string { return "https://agents.example.com:8443/agents/" + a + "/mcp" },
		func(a string) string { return "https://agents.example.com:8443/agents/" + a + "/mcp/server-card" })
	if cat.SpecVersion != "1.0" || cat.Host.DisplayName != "cards" || len(cat.Entries) != 2 {
		t.Fatalf("%+v", cat)
	}
	e := cat.Entries[0]
	if e.Identifier != "urn:air:agents.example.com:mcp:tech-research" || e.Type != CardMediaType ||
		e.URL != "https://agents.example.com:8443/agents/tech_research/mcp/server-card" || e.UpdatedAt != "2026-11-25T12:00:00Z" {
		t.Errorf("entry %+v", e)
	}
	c := e.Extensions[CardExtensionKey].(Card)
	if c.Remotes[0].URL != "https://agents.example.com:8443/agents/tech_research/mcp" || c.Name != "com.example.cards/tech-research" {
		t.Errorf("embedded card %+v", c)
	}
	if cat.Entries[1].Identifier != "urn:air:agents.example.com:mcp:tools" {
		t.Errorf("order or identifier: %+v", cat.Entries[1])
	}
	for in, want := range map[string]string{"http://[::1]:8200": "--1", "http://localhost": "localhost", "127.0.0.1:80": "127.0.0.1"} {
		if got := publisherOf(in); got != want {
			t.Errorf("publisherOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
