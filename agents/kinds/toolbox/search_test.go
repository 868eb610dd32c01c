package toolbox_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/kinds/toolbox"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

const searchCfg = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp"}
    web: {url: "http://127.0.0.1:2/mcp"}
    down: {url: "http://127.0.0.1:3/mcp"}
policy:
  callers:
    alice: {servers: ["files", "web", "down"], tools: {deny: ["files__write_file"]}}
    bob: {servers: ["web"]}
agents:
  tb: {kind: toolbox, servers: [files, web, down], tools: {deny: ["web__secret_search"]}}
`

func searchDown() *agenttest.FakeDown {
	return &agenttest.FakeDown{
		ToolLists: map[string][]mcpgo.Tool{
			"files": {
				mcpgo.NewTool("read_file", mcpgo.WithDescription("Read the contents of a file."), mcpgo.WithString("path", mcpgo.Description("Path of the file"))),
				mcpgo.NewTool("write_file", mcpgo.WithDescription("Create or overwrite a file with new content.")),
				mcpgo.NewTool("list_directory", mcpgo.WithDescription("List the files of a directory.")),
			},
			"web": {
				mcpgo.NewTool("web_search", mcpgo.WithDescription("Search the web for pages.")),
				mcpgo.NewTool("secret_search", mcpgo.WithDescription("Search the secret file archive.")),
			},
		},
		ListErr: map[string]error{"down": fmt.Errorf("downstream %q: connecting: %w", "down", mcpclient.ErrUnavailable)},
	}
}

// found lists the server/name pairs of a search_tools result.
func found(t *testing.T, r tbResult) []string {
	t.Helper()
	if r.isError {
		t.Fatalf("search_tools failed: %s", r.text)
	}
	var out []string
	tools, _ := r.structured["tools"].([]any)
	for _, v := range tools {
		h := v.(map[string]any)
		if _, ok := h["inputSchema"].(map[string]any); !ok || h["description"] == nil {
			t.Errorf("result without schema or description: %v", h)
		}
		out = append(out, fmt.Sprintf("%s/%s", h["server"], h["name"]))
	}
	return out
}

// TestSearchToolsFilteredPerCaller: one index, two callers with different
// rules, each gets only what its get_server_tools would show; both
// protocol styles (2026-07-28 sessionless, and a session-based one).
func TestSearchToolsFilteredPerCaller(t *testing.T) {
	ta := agenttest.New(t, searchCfg, searchDown())
	for _, version := range []string{"", "2025-06-18"} {
		t.Run("version "+version, func(t *testing.T) {
			alice := ta.Session(t, "tb", "alice", version, nil)
			r := tbCallTool(t, alice, "search_tools", map[string]any{"query": "write a file"})
			got := found(t, r)
			if len(got) == 0 || slices.Contains(got, "files/write_file") || slices.Contains(got, "web/secret_search") {
				t.Errorf("alice: %v (write_file is denied to her, secret_search to the agent)", got)
			}
			if !slices.Contains(got, "files/read_file") {
				t.Errorf("alice: read_file missing from %v", got)
			}
			if u := fmt.Sprint(r.structured["unavailable"]); !strings.Contains(u, "down") {
				t.Errorf("the unreachable server is not named: %v", u)
			}
			bob := ta.Session(t, "tb", "bob", version, nil)
			if got := found(t, tbCallTool(t, bob, "search_tools", map[string]any{"query": "search files"})); !slices.Equal(got, []string{"web/web_search"}) {
				t.Errorf("bob may use web only, and not secret_search: %v", got)
			}
		})
	}
}

func TestSearchToolsFollowsListChanges(t *testing.T) {
	down := searchDown()
	ta := agenttest.New(t, searchCfg, down)
	alice := ta.Session(t, "tb", "alice", "", nil)
	if got := found(t, tbCallTool(t, alice, "search_tools", map[string]any{"query": "images"})); len(got) != 0 {
		t.Fatalf("nothing is about images yet: %v", got)
	}
	down.Edit(func() {
		down.ToolLists["web"] = append(slices.Clone(down.ToolLists["web"]), mcpgo.NewTool("image_search", mcpgo.WithDescription("Find images on the web.")))
	})
	if got := found(t, tbCallTool(t, alice, "search_tools", map[string]any{"query": "images", "servers": []any{"web"}})); !slices.Equal(got, []string{"web/image_search"}) {
		t.Errorf("a new tool is found at the next search: %v", got)
	}
}

func TestSearchToolsArguments(t *testing.T) {
	ta := agenttest.New(t, searchCfg, searchDown())
	alice := ta.Session(t, "tb", "alice", "", nil)
	for name, args := range map[string]map[string]any{
		"no query":       {},
		"empty query":    {"query": ""},
		"long query":     {"query": strings.Repeat("x", 2000)},
		"limit 0":        {"query": "file", "limit": 0},
		"limit too big":  {"query": "file", "limit": 51},
		"budget 1.5":     {"query": "file", "max_schema_tokens": 1.5},
		"unknown server": {"query": "file", "servers": []any{"other"}},
		"servers string": {"query": "file", "servers": "files"},
	} {
		t.Run(name, func(t *testing.T) {
			r := tbCallTool(t, alice, "search_tools", args)
			if !r.isError || r.code() != toolbox.CodeInvalidArgument {
				t.Errorf("got isError=%v code=%q text=%q", r.isError, r.code(), r.text)
			}
		})
	}
	r := tbCallTool(t, alice, "search_tools", map[string]any{"query": "file", "max_schema_tokens": 1})
	if got := found(t, r); len(got) != 0 || r.structured["truncated"] != true {
		t.Errorf("a budget of 1 token holds no definition: %v, truncated %v", got, r.structured["truncated"])
	}
}
