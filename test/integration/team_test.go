package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// newToolsServer is a downstream MCP server with the named tools, each
// answering its own name.
func newToolsServer(t *testing.T, name string, tools ...string) string {
	t.Helper()
	s := server.NewMCPServer(name, "1")
	for _, tool := range tools {
		s.AddTool(mcp.NewTool(tool), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(tool), nil
		})
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// teamPins is the absolute path of the shipped pins file of the team
// example (the test's config lives elsewhere).
func teamPins(t *testing.T) string {
	p, err := filepath.Abs("../../configs/pins/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// teamConfig is the shipped configs/team.yaml on loopback, its servers and
// providers replaced by fakes; the test fails when the file no longer has
// what it replaces.
func teamConfig(t *testing.T, tickets, search, anthropic string) string {
	t.Helper()
	raw, err := os.ReadFile("../../configs/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	for _, r := range [][2]string{
		{`(?m)^listen: .*$`, `listen: "127.0.0.1:{{PORT}}"`},
		{`url: http://tickets:8000/mcp`, "url: " + tickets},
		{`url: http://search:8000/mcp`, "url: " + search},
		{`(?m)^pins: pins/team.yaml`, "pins: " + teamPins(t)},
		{`(?m)^(\s+)api_key: \$\{ANTHROPIC_API_KEY\}`, "${1}api_key: $${ANTHROPIC_API_KEY}\n${1}base_url: " + anthropic},
	} {
		re := regexp.MustCompile(r[0])
		if !re.MatchString(cfg) {
			t.Fatalf("configs/team.yaml no longer matches %s; update the test", r[0])
		}
		cfg = re.ReplaceAllString(cfg, r[1])
	}
	return cfg
}

// The team example uses the tickets server "without its admin_* tools"
// (docs/configuration.md, "Team example"): no agent of configs/team.yaml offers one, to a
// caller (the tickets proxy's list) or to a model (the research agent,
// called directly by alice or through the report chain by ci, which
// run_as: workflow lets reach research).
func TestTeamExampleHidesAdminTools(t *testing.T) {
	tickets := newToolsServer(t, "tickets", "list_tickets", "update_ticket", "delete_ticket", "admin_reset", "admin_purge")
	search := newToolsServer(t, "search", "web_search")
	llm := fakellm.New(t)
	cfg := teamConfig(t, tickets, search, llm.AnthropicBaseURL())
	raw, _ := os.ReadFile("../../configs/team.yaml")
	tokens := map[string]string{}
	env := []string{"LLM_BASE_URL=" + llm.OpenAIBaseURL()}
	for _, kv := range dummyEnv(raw) {
		k, v, _ := strings.Cut(kv, "=")
		tokens[k] = v
		env = append(env, kv)
	}
	g := startGateway(t, cfg, env...)

	as := func(token string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tokens[token], "MCP-Protocol-Version": "2026-07-28"}
	}
	send := func(t *testing.T, token, agent string) {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"what broke this week?"},%s}}`, badMeta)
		hdr := as(token)
		hdr["Mcp-Method"], hdr["Mcp-Name"] = "tools/call", "send_message"
		r := badPost(t, g.Base+"/agents/"+agent+"/mcp", body, hdr)
		if r.status != http.StatusOK || r.rpc.Result == nil || r.rpc.Result.IsError {
			t.Fatalf("%s calling %s: %d %s", token, agent, r.status, r.body)
		}
	}
	// offered checks every chat request since the nth: the model saw
	// tickets' tools, none of them admin_*.
	offered := func(t *testing.T, from int) {
		t.Helper()
		reqs := llm.ChatRequests()[from:]
		sawTickets := false
		for _, r := range reqs {
			for _, tool := range r.Chat.Tools {
				sawTickets = sawTickets || strings.HasPrefix(tool, "tickets__")
				if strings.HasPrefix(tool, "tickets__admin_") {
					t.Errorf("model %s was offered %s (tools %v)", r.Chat.Model, tool, r.Chat.Tools)
				}
			}
		}
		if !sawTickets {
			t.Errorf("no model request since #%d offered the tickets tools (%d requests)", from, len(reqs))
		}
	}

	t.Run("alice calls research", func(t *testing.T) {
		from := len(llm.ChatRequests())
		send(t, "ALICE_TOKEN", "research")
		offered(t, from)
	})
	t.Run("ci calls report, which runs research", func(t *testing.T) {
		from := len(llm.ChatRequests())
		send(t, "CI_TOKEN", "report")
		offered(t, from)
	})
	t.Run("dashboard lists the tickets proxy", func(t *testing.T) {
		hdr := as("DASHBOARD_TOKEN")
		hdr["Mcp-Method"] = "tools/list"
		r := badPost(t, g.Base+"/agents/tickets/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+badMeta+`}}`, hdr)
		if r.status != http.StatusOK || !strings.Contains(r.body, `"list_tickets"`) {
			t.Fatalf("tools/list: %d %s", r.status, r.body)
		}
		if strings.Contains(r.body, "admin_") {
			t.Errorf("the tickets proxy lists admin tools: %s", r.body)
		}
	})
}
