package integration

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestToolboxSearchEmbeddings: a toolbox with tool_search.embeddings
// embeds its tools once through the provider, then each search_tools one
// query, after a reload too; each request carries the provider's key and
// nothing of the caller's (whose header the provider forwards on chat
// requests); with the provider down, search_tools still answers, and the
// failure is counted.
func TestToolboxSearchEmbeddings(t *testing.T) {
	alpha := newPxServer(t, "alpha")
	llm := fakellm.New(t)
	llm.RequireKey("provider-key-0123456789")
	g := startGateway(t, fmt.Sprintf(`
name: tb
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abc}
models:
  providers:
    local: {type: openai, base_url: "%s", api_key: provider-key-0123456789, forward_headers: {X-User-Token: X-User-Token}}
mcp:
  servers:
    alpha: {url: "%s"}
agents:
  tb: {kind: toolbox, servers: [alpha], tool_search: {embeddings: {provider: local, model: embed-model}}}
`, llm.OpenAIBaseURL(), alpha.url()))
	web := pxConnect(t, g.Base+"/agents/tb/mcp", "", map[string]string{"Authorization": "Bearer web-token-0123456789abc",
		"X-User-Token": "caller-secret-0123456789"}, nil)

	for _, q := range []string{"echo some text", "show an image"} {
		if o := tbCall(t, web, "search_tools", map[string]any{"query": q}); o.isError || len(o.toolNames()) == 0 {
			t.Fatalf("search %q: %+v", q, o)
		}
	}
	reqs := llm.EmbeddingRequests()
	if len(reqs) != 2 || len(reqs[0].Inputs) < 2 || len(reqs[1].Inputs) != 1 || reqs[1].Inputs[0] != "show an image" {
		t.Fatalf("want the tools with the first query, then the second query alone; got %d requests", len(reqs))
	}
	for _, r := range llm.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer provider-key-0123456789" {
			t.Errorf("embeddings request with Authorization %q, want the provider's own key", got)
		}
		for k, vs := range r.Header {
			if strings.Contains(strings.Join(vs, " "), "caller-secret") || strings.Contains(strings.Join(vs, " "), "web-token") {
				t.Errorf("the caller's credential reached the provider in %s", k)
			}
		}
	}

	// A reload builds the agent anew: its vectors are kept, only the query
	// is embedded.
	cfg, err := os.ReadFile(g.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	g.writeConfig(t, strings.Replace(string(cfg), "kind: toolbox,", "kind: toolbox, description: reloaded,", 1))
	if code, ans := g.reload(t); code != http.StatusOK || ans["unchanged"] != false || !strings.Contains(fmt.Sprint(ans["changes"]), "agent tb changed") {
		t.Fatalf("reload: %d %v", code, ans)
	}
	web = pxConnect(t, g.Base+"/agents/tb/mcp", "", map[string]string{"Authorization": "Bearer web-token-0123456789abc"}, nil)
	if o := tbCall(t, web, "search_tools", map[string]any{"query": "echo some text"}); o.isError || len(o.toolNames()) == 0 {
		t.Fatalf("search after the reload: %+v", o)
	}
	if reqs := llm.EmbeddingRequests(); len(reqs) != 3 || len(reqs[2].Inputs) != 1 {
		t.Fatalf("after a reload: want one request of the query alone, got %d requests", len(reqs))
	}

	llm.FailEmbeddings(http.StatusServiceUnavailable)
	if o := tbCall(t, web, "search_tools", map[string]any{"query": "echo some text"}); o.isError || len(o.toolNames()) == 0 {
		t.Fatalf("with the provider down: %+v", o)
	}
	for outcome, want := range map[string]float64{"ok": 3, "error": 1} {
		series := fmt.Sprintf(`pallasgw_tool_search_embedding_requests_total{agent="tb",model="embed-model",outcome=%q,provider="local"}`, outcome)
		if got, _ := g.metric(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
