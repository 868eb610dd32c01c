package proxy_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
)

const proxySearchCfg = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
    web: {url: "http://127.0.0.1:2/mcp"}
policy:
  callers:
    alice: {tools: {deny: ["files__write_file"]}}
agents:
  px: {kind: proxy, servers: [files, web], tool_search: true, tools: {deny: ["files__admin_*"]}}
  one: {kind: proxy, servers: [web], tool_search: true}
  plain: {kind: proxy, servers: [web]}
`

func proxySearchDown() *agenttest.FakeDown {
	return &agenttest.FakeDown{
		ToolLists: map[string][]mcpgo.Tool{
			"files": {
				mcpgo.NewTool("read_file", mcpgo.WithDescription("Read the contents of a file.")),
				mcpgo.NewTool("write_file", mcpgo.WithDescription("Write a file.")),
				mcpgo.NewTool("admin_wipe", mcpgo.WithDescription("Delete every file.")),
			},
			"web": {
				mcpgo.NewTool("web_search", mcpgo.WithDescription("Search the web for pages and files.")),
				mcpgo.NewTool("search_tools", mcpgo.WithDescription("The downstream's own.")),
			},
		},
	}
}

// searchNames calls search_tools and returns the names it found.
func searchNames(t *testing.T, cs *sdk.ClientSession, query string) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %s", err, agenttest.AllText(res))
	}
	var r toolsearch.Result
	if err := json.Unmarshal([]byte(agenttest.AllText(res)), &r); err != nil {
		t.Fatalf("result: %v", err)
	}
	var out []string
	for _, h := range r.Tools {
		out = append(out, h.Name)
	}
	slices.Sort(out)
	return out
}

func TestProxySearchTools(t *testing.T) {
	down := proxySearchDown()
	ta := agenttest.New(t, proxySearchCfg, down)
	for _, v := range []string{"", "2025-11-25"} {
		t.Run("protocol "+v, func(t *testing.T) {
			bob := ta.Session(t, "px", "bob", v, nil)
			if got := agenttest.ToolNames(t, bob); !slices.Contains(got, "search_tools") || !slices.Contains(got, "files__read_file") {
				t.Errorf("a proxy with tool_search lists every tool and search_tools: %v", got)
			}
			if got, want := searchNames(t, bob, "file"), []string{"files__read_file", "files__write_file", "web__web_search"}; !slices.Equal(got, want) {
				t.Errorf("bob: %v, want %v (admin_wipe is hidden by the agent)", got, want)
			}
			alice := ta.Session(t, "px", "alice", v, nil)
			if got, want := searchNames(t, alice, "file"), []string{"files__read_file", "web__web_search"}; !slices.Equal(got, want) {
				t.Errorf("alice: %v, want %v (write_file is denied to her)", got, want)
			}
			one := ta.Session(t, "one", "bob", v, nil)
			tools, err := one.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, tl := range tools.Tools {
				if tl.Name == "search_tools" {
					n++
					if tl.Description != toolsearch.ToolDescription {
						t.Errorf("the downstream's search_tools is listed, not the agent's: %q", tl.Description)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d search_tools listed, want 1", n)
			}
			if got := searchNames(t, one, "web pages"); !slices.Equal(got, []string{"web_search"}) {
				t.Errorf("single server, unprefixed: %v", got)
			}
			// Without tool_search the downstream's own search_tools is the one listed.
			plain, err := ta.Session(t, "plain", "bob", v, nil).ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range plain.Tools {
				if tl.Name == "search_tools" && tl.Description != "The downstream's own." {
					t.Errorf("a proxy without tool_search offers a search_tools of its own")
				}
			}
		})
	}
	for _, c := range down.CallLog() {
		if c == "web/search_tools" {
			t.Errorf("the shadowed downstream search_tools was called")
		}
	}
}
