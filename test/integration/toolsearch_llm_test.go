package integration

// An llm agent that searches its tools (tool_search): the model is first
// offered search_tools, and the tools a search returns become real tools of
// the following turns. The fake model calls the tool it found by taking its
// name from the search's result (fakellm.CallFound), not from the script.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// catalogServer is a downstream MCP server serving one server's tools of
// the tool search catalog (agents/toolsearch/testdata/catalog.json); every
// call answers "<tool> done" and is recorded.
type catalogServer struct {
	ts    *httptest.Server
	tools []mcpgo.Tool
	mu    sync.Mutex
	calls []string
}

func newCatalogServer(t *testing.T, name string) *catalogServer {
	t.Helper()
	raw, err := os.ReadFile("../../agents/toolsearch/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Servers []struct {
			Name  string `json:"name"`
			Tools []struct {
				Name        string          `json:"name"`
				Title       string          `json:"title"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	d := &catalogServer{}
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(false))
	for _, srv := range cat.Servers {
		if srv.Name != name {
			continue
		}
		for _, ct := range srv.Tools {
			tool := mcpgo.NewToolWithRawSchema(ct.Name, ct.Description, ct.InputSchema)
			tool.Title = ct.Title
			d.tools = append(d.tools, tool)
			s.AddTool(tool, func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				d.mu.Lock()
				d.calls = append(d.calls, req.Params.Name)
				d.mu.Unlock()
				return mcpgo.NewToolResultText(req.Params.Name + " done"), nil
			})
		}
	}
	if len(d.tools) == 0 {
		t.Fatalf("the catalog has no server %q", name)
	}
	d.ts = httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *catalogServer) url() string { return d.ts.URL + "/mcp" }

func (d *catalogServer) called() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// searchResultNames are the tool names of the search_tools result for
// callID in a chat request.
func searchResultNames(t *testing.T, r fakellm.Request, callID string) []string {
	t.Helper()
	res, ok := findToolResult(r, callID)
	if !ok || res.IsError {
		t.Fatalf("search result %s = %+v (found %v); messages %q", callID, res, ok, chatRoles(r))
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("search result %q: %v", res.Text, err)
	}
	var names []string
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// sendWithProgress calls send_message on agent with a progress token and
// returns the answer and the progress messages.
func (e *llmEnv) sendWithProgress(t *testing.T, agent, message string) (string, *progressLog) {
	t.Helper()
	var log progressLog
	cs := e.session(t, agent, "", log.add)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": message},
		Meta: mcp.Meta{"progressToken": "search-tok"}})
	if err != nil {
		t.Fatalf("send_message to %s: %v", agent, err)
	}
	if res.IsError {
		t.Fatalf("send_message to %s: isError result: %s\ngateway log:\n%s", agent, resultText(res), e.Logs())
	}
	return resultText(res), &log
}

func TestLLMToolSearch(t *testing.T) {
	cat := map[string]*catalogServer{}
	var extra strings.Builder
	for _, name := range []string{"github", "jira", "slack", "kubernetes"} {
		cat[name] = newCatalogServer(t, name)
		fmt.Fprintf(&extra, "    %s: {transport: http, url: %q, timeout: 30s}\n", name, cat[name].url())
	}
	const searching = `    servers: [srv, github, jira, slack, kubernetes]
    tool_search: {mode: auto, always_offer: [srv__echo]}
`
	agents := "  finder:\n" + searching + "  finder_ant:\n    model: anthropic.fake-model\n" + searching +
		"  few:\n    servers: [srv]\n    tool_search: {mode: auto}\n"
	e := startLLM(t, agents, llmOpts{extraMCP: extra.String()})
	const task = "file a new issue in the github repository about the login crash"
	for _, pc := range []providerCase{
		{"openai", "finder", func(e *llmEnv) *fakellm.Server { return e.oai }},
		{"anthropic", "finder_ant", func(e *llmEnv) *fakellm.Server { return e.ant }},
	} {
		t.Run(pc.name, func(t *testing.T) {
			f := pc.fake(e)
			n := len(f.ChatRequests())
			f.Script(
				fakellm.ToolCalls(fakellm.Call{ID: "s-1", Name: "search_tools", Args: callArgs(`{"query":"` + task + `"}`)}),
				fakellm.CallFound(callArgs(`{"owner":"acme","repo":"web","title":"Login page crashes"}`)),
				fakellm.Text("filed it"))
			got, log := e.sendWithProgress(t, pc.agent, task)
			reqs := f.ChatRequests()[n:]
			if got != "filed it" || len(reqs) != 3 || f.Pending() != 0 {
				t.Fatalf("answer %q after %d model requests (%d steps left)", got, len(reqs), f.Pending())
			}
			// The first request offers search_tools and the always_offer tool only.
			if tools := toolsOffered(reqs[0]); tools != "search_tools,srv__echo" {
				t.Errorf("first request offers %s", tools)
			}
			if !strings.Contains(reqs[0].Chat.System, "search_tools") {
				t.Errorf("system prompt does not mention search_tools: %q", reqs[0].Chat.System)
			}
			// Every tool the search returned is offered on the next turn.
			found := searchResultNames(t, reqs[1], "s-1")
			if len(found) == 0 || found[0] != "github__create_issue" {
				t.Fatalf("search found %q, want github__create_issue first", found)
			}
			want := append([]string{"search_tools", "srv__echo"}, found...)
			slices.Sort(want)
			if tools := toolsOffered(reqs[1]); tools != strings.Join(want, ",") {
				t.Errorf("second request offers %s, want %s", tools, strings.Join(want, ","))
			}
			// The model's call of the found tool reached the downstream.
			if c := cat["github"].called(); len(c) == 0 || c[len(c)-1] != "create_issue" {
				t.Fatalf("github calls %q, want create_issue", c)
			}
			asst := reqs[2].Chat.Messages[len(reqs[2].Chat.Messages)-2]
			if len(asst.ToolCalls) != 1 || asst.ToolCalls[0].Name != "github__create_issue" {
				t.Fatalf("the model's second turn = %+v", asst)
			}
			if res, ok := findToolResult(reqs[2], asst.ToolCalls[0].ID); !ok || res.Text != "create_issue done" || res.IsError {
				t.Errorf("result of the found tool = %+v (found %v)", res, ok)
			}
			// The search shows in the progress.
			eventually(t, 10*time.Second, "the search's progress", func() bool { return log.has(pc.agent + " search: " + task) })
		})
	}
	t.Run("auto with few tools offers them all", func(t *testing.T) {
		n := len(e.oai.ChatRequests())
		e.oai.Script(fakellm.Text("no search"))
		if got := e.answer(t, "few", "hello"); got != "no search" {
			t.Fatalf("answer %q", got)
		}
		if tools := toolsOffered(e.oai.ChatRequests()[n]); tools != "srv__admin_wipe,srv__dotted_name,srv__echo,srv__fail,srv__image,srv__slow" {
			t.Errorf("offered %s", tools)
		}
	})
	t.Run("bad arguments are an error result", func(t *testing.T) {
		n := len(e.oai.ChatRequests())
		e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "s-bad", Name: "search_tools", Args: callArgs(`{"query":"x","servers":["nope"]}`)}),
			fakellm.Text("gave up"))
		if got := e.answer(t, "finder", "search badly"); got != "gave up" {
			t.Fatalf("answer %q", got)
		}
		res, ok := findToolResult(e.oai.ChatRequests()[n+1], "s-bad")
		if !ok || !res.IsError || !strings.Contains(res.Text, `no server "nope"`) {
			t.Errorf("result = %+v (found %v)", res, ok)
		}
	})
}

// TestLLMToolSearchPins: a tool awaiting approval on a server with
// pin_tools: enforce is neither found by the model's search nor callable;
// the same tools on an unpinned server are.
func TestLLMToolSearchPins(t *testing.T) {
	pinned, open := newCatalogServer(t, "github"), newCatalogServer(t, "github")
	// Approve every tool of the pinned server but create_issue.
	var file pins.File
	for _, tool := range pinned.tools {
		if tool.Name == "create_issue" {
			continue
		}
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		def, err := pins.Definition(raw)
		if err != nil {
			t.Fatal(err)
		}
		file.Approve("pinned", def)
	}
	b, err := file.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("    pinned: {transport: http, url: %q, timeout: 30s, pin_tools: enforce}\n    open: {transport: http, url: %q, timeout: 30s}\n",
		pinned.url(), open.url())
	agents := `  guarded:
    servers: [pinned]
    tool_search: {mode: always}
  unguarded:
    servers: [open]
    tool_search: {mode: always}
`
	e := startLLM(t, agents, llmOpts{extraMCP: extra, extraTop: fmt.Sprintf("pins: %q\n", path)})
	for _, c := range []struct {
		agent, server string
		down          *catalogServer
		approved      bool
	}{
		{"unguarded", "open", open, true}, // the control: the same tools, not pinned
		{"guarded", "pinned", pinned, false},
	} {
		t.Run(c.agent, func(t *testing.T) {
			n := len(e.oai.ChatRequests())
			e.oai.Script(
				fakellm.ToolCalls(fakellm.Call{ID: "p-s", Name: "search_tools", Args: callArgs(`{"query":"create an issue"}`)}),
				fakellm.ToolCalls(fakellm.Call{ID: "p-c", Name: c.server + "__create_issue", Args: callArgs(`{"owner":"o","repo":"r","title":"t"}`)}),
				fakellm.Text("over"))
			if got := e.answer(t, c.agent, "create an issue"); got != "over" {
				t.Fatalf("answer %q", got)
			}
			reqs := e.oai.ChatRequests()[n:]
			found := searchResultNames(t, reqs[1], "p-s")
			if !slices.Contains(found, c.server+"__list_issues") {
				t.Errorf("search found %q, want %s__list_issues among them", found, c.server)
			}
			if slices.Contains(found, c.server+"__create_issue") != c.approved {
				t.Errorf("search found %q: create_issue found = %v, want %v", found, !c.approved, c.approved)
			}
			for i, r := range reqs {
				if strings.Contains(toolsOffered(r), "__create_issue") != (c.approved && i > 0) {
					t.Errorf("request %d offers %s", i+1, toolsOffered(r))
				}
			}
			res, ok := findToolResult(reqs[2], "p-c")
			called := slices.Contains(c.down.called(), "create_issue")
			if c.approved {
				if !ok || res.IsError || !called {
					t.Fatalf("call of the approved tool: %+v (found %v, downstream called %v)", res, ok, called)
				}
				return
			}
			if !ok || !res.IsError || called {
				t.Fatalf("call of the unapproved tool: %+v (found %v, downstream called %v)", res, ok, called)
			}
		})
	}
}
