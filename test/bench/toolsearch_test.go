package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

// Tool search: what an llm agent's tool_search saves in what it sends its
// model. The agent has 300 tools on 10 downstream servers (30 each, the
// tools of the search catalog, agents/toolsearch/testdata/catalog.json:
// real servers' tool sets with their schemas). Two agents over the same
// servers, one with every schema offered (tool_search off, the direct
// path) and one with tool_search: {mode: auto}, each run for both APIs.
//
// Measured, from the bodies the (recording) fake model receives:
//   - the first model request's body: every schema against search_tools
//     and nothing else (target: ≥ 80% smaller);
//   - a whole task that needs one tool: every schema offered, the model
//     calls the tool and answers (2 requests); against searching, the model
//     searches, calls the tool it found, then answers (3 requests, the
//     found tools offered from the second).
//
// Sizes, not times: the figures do not depend on the machine, and the call
// count is fixed (-benchtime does not scale it).
func BenchmarkToolSearch(b *testing.B) {
	noPerOpFigures(b)
	if warmUpOnly(b) {
		return
	}
	downs := newCatalogDownstreams(b)
	llm := fakellm.New(b)
	var servers, mcpServers strings.Builder
	for i, d := range downs {
		if i > 0 {
			servers.WriteString(", ")
		}
		fmt.Fprintf(&servers, "s%d", i)
		fmt.Fprintf(&mcpServers, "    s%d: {url: %q, timeout: 30s}\n", i, d.url())
	}
	g := startGateway(b, fmt.Sprintf(toolSearchConfig, llm.OpenAIBaseURL(), llm.AnthropicBaseURL(), mcpServers.String(), servers.String()))
	target := downs.lookup(b, "github", "create_issue")
	const task = "file a new issue in the github repository about the login crash"
	args := json.RawMessage(`{"owner":"acme","repo":"web","title":"Login page crashes"}`)
	for i, api := range []string{"openai", "anthropic"} {
		// send runs agent on message and returns the bodies of the chat
		// requests it made.
		send := func(agent string, steps ...fakellm.Step) []int {
			n := len(llm.ChatRequests())
			llm.Script(steps...)
			mustLoad(b, g, load.Options{URL: g.agentURL(agent), Style: load.Sessionless, Concurrency: 1, Requests: 1,
				Tool: "send_message", Arguments: map[string]any{"message": task}})
			if llm.Pending() != 0 {
				b.Fatalf("%s: %d scripted steps left", agent, llm.Pending())
			}
			var sizes []int
			for _, r := range llm.ChatRequests()[n:] {
				sizes = append(sizes, len(r.Body))
			}
			return sizes
		}
		every := send("every_"+api, fakellm.ToolCalls(fakellm.Call{Name: target.name, Args: args}), fakellm.Text("filed"))
		before := target.down.count(target.tool)
		search := send("search_"+api,
			fakellm.ToolCalls(fakellm.Call{Name: "search_tools", Args: json.RawMessage(`{"query":"` + task + `"}`)}),
			fakellm.CallFound(args), fakellm.Text("filed"))
		if target.down.count(target.tool) != before+1 {
			b.Errorf("%s: the searching agent did not call %s (the search did not rank it first)", api, target.name)
		}
		if len(every) != 2 || len(search) != 3 {
			b.Fatalf("%s: %d and %d model requests, want 2 and 3", api, len(every), len(search))
		}
		reportToolSearch(b, api, 80+2*i, every, search)
	}
}

func reportToolSearch(b *testing.B, api string, order int, every, search []int) {
	first := float64(search[0]) / float64(every[0])
	sum := func(xs []int) int {
		n := 0
		for _, x := range xs {
			n += x
		}
		return n
	}
	whole := float64(sum(search)) / float64(sum(every))
	kb := func(n int) string { return fmt.Sprintf("%.1f kB (≈ %d tokens)", float64(n)/1024, n/4) }
	b.ReportMetric(first, api+"-first-request-ratio")
	b.ReportMetric(whole, api+"-task-ratio")
	b.Logf("tool search, %s API, 300 tools on 10 servers:\n%s", api, table([]string{"model requests", "every schema offered", "tool_search: auto", "ratio", "target"}, func(add func(...string)) {
		add("first request body", kb(every[0]), kb(search[0]), fmt.Sprintf("%.3f (%.1f%% smaller)", first, 100*(1-first)), "≥ 80% smaller "+verdict(first <= 0.2))
		add("a task needing one tool, all requests", fmt.Sprintf("%s in %d", kb(sum(every)), len(every)), fmt.Sprintf("%s in %d", kb(sum(search)), len(search)),
			fmt.Sprintf("%.3f (%.1f%% smaller)", whole, 100*(1-whole)), "")
	}))
	record(order, "tool search ("+api+"), 300 tools on 10 servers: first model request body", "≥ 80% smaller",
		fmt.Sprintf("%s: %.1f%% smaller", kb(search[0]), 100*(1-first)), kb(every[0])+" (every schema)", fmt.Sprintf("%.3f", first))
	record(order+1, "tool search ("+api+"): a task needing one tool, all model requests", "",
		fmt.Sprintf("%s in %d: %.1f%% smaller", kb(sum(search)), len(search), 100*(1-whole)), fmt.Sprintf("%s in %d", kb(sum(every)), len(every)), fmt.Sprintf("%.3f", whole))
}

const toolSearchConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-bench", timeout: 60s}
    anthropic: {base_url: %q, api_key: "sk-bench", timeout: 60s}
mcp:
  servers:
%[3]s
agents:
  every_openai: {servers: [%[4]s]}
  search_openai: {servers: [%[4]s], tool_search: {mode: auto}}
  every_anthropic: {model: anthropic.fake-model, servers: [%[4]s]}
  search_anthropic: {model: anthropic.fake-model, servers: [%[4]s], tool_search: {mode: auto}}
`

const (
	catalogServers    = 10
	toolsPerServer    = 30
	catalogToolSearch = "../../agents/toolsearch/testdata/catalog.json"
)

// catalogDownstream is one MCP server in this process serving catalog
// tools; it counts the calls of each.
type catalogDownstream struct {
	ts     *httptest.Server
	origin map[string]string // catalog server/tool → the tool's name here
	mu     sync.Mutex
	calls  map[string]int
}

func (d *catalogDownstream) url() string { return d.ts.URL + "/mcp" }

func (d *catalogDownstream) count(tool string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[tool]
}

type catalogDownstreams []*catalogDownstream

// catalogTarget is a catalog tool as the agents see it.
type catalogTarget struct {
	down       *catalogDownstream
	tool, name string // its name on the downstream, and as the model calls it
}

// lookup finds the catalog's server/tool among the downstreams.
func (ds catalogDownstreams) lookup(b *testing.B, server, tool string) catalogTarget {
	for i, d := range ds {
		if name, ok := d.origin[server+"/"+tool]; ok {
			return catalogTarget{down: d, tool: name, name: fmt.Sprintf("s%d__%s", i, name)}
		}
	}
	b.Fatalf("%s/%s is not among the downstreams' tools", server, tool)
	return catalogTarget{}
}

// newCatalogDownstreams spreads the first catalogServers × toolsPerServer
// tools of the catalog over catalogServers servers, round robin (a name
// already on a server goes to the next one).
func newCatalogDownstreams(b *testing.B) catalogDownstreams {
	b.Helper()
	raw, err := os.ReadFile(catalogToolSearch)
	if err != nil {
		b.Fatal(err)
	}
	var cat struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		b.Fatal(err)
	}
	ds := make(catalogDownstreams, catalogServers)
	srvs := make([]*server.MCPServer, catalogServers)
	names := make([][]string, catalogServers)
	for i := range ds {
		ds[i] = &catalogDownstream{origin: map[string]string{}, calls: map[string]int{}}
		srvs[i] = server.NewMCPServer(fmt.Sprintf("s%d", i), "1.0.0", server.WithToolCapabilities(false))
	}
	n := 0
	for _, cs := range cat.Servers {
		for _, rt := range cs.Tools {
			var t struct {
				Name        string          `json:"name"`
				Title       string          `json:"title"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if err := json.Unmarshal(rt, &t); err != nil {
				b.Fatal(err)
			}
			for k := range catalogServers {
				i := (n + k) % catalogServers
				if len(names[i]) == toolsPerServer || slices.Contains(names[i], t.Name) {
					continue
				}
				names[i] = append(names[i], t.Name)
				d := ds[i]
				d.origin[cs.Name+"/"+t.Name] = t.Name
				tool := mcp.NewToolWithRawSchema(t.Name, t.Description, t.InputSchema)
				tool.Title = t.Title
				srvs[i].AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					d.mu.Lock()
					d.calls[req.Params.Name]++
					d.mu.Unlock()
					return mcp.NewToolResultText("done"), nil
				})
				n++
				break
			}
		}
	}
	if n != catalogServers*toolsPerServer {
		b.Fatalf("the catalog gave %d tools, want %d", n, catalogServers*toolsPerServer)
	}
	for i, d := range ds {
		d.ts = httptest.NewServer(server.NewStreamableHTTPServer(srvs[i]))
		b.Cleanup(d.ts.Close)
	}
	return ds
}
