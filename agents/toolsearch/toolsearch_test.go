package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"git_create_branch", "git creat branch"},
		{"listObjectsV2", "list object v 2 listobjectsv2"},
		{"HTTPServer", "http server httpserver"},
		{"Evaluate JavaScript on the page", "evalu java script javascript page"},
		{"Lists the open issues of a repo", "list open issu repo"},
		{"running stopped containers", "run stop contain"},
		{"kebab-case and spaces", "kebab case space"},
		{"", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := fmt.Sprint(tokens(nil, tc.in))
			if want := fmt.Sprint(strings.Fields(tc.want)); got != want {
				t.Errorf("tokens(%q) = %s, want %s", tc.in, got, want)
			}
		})
	}
}

func tool(name, desc, schema string) mcp.Tool {
	return mcp.NewToolWithRawSchema(name, desc, json.RawMessage(schema))
}

func entry(srv, name, desc string) Entry {
	return Entry{Server: srv, Name: srv + "__" + name, Tool: tool(name, desc, `{"type":"object","properties":{"q":{"type":"string","description":"what"}}}`)}
}

func names(r Result) []string {
	var out []string
	for _, h := range r.Tools {
		out = append(out, h.Name)
	}
	return out
}

func TestSearchRanksOnlyTheCallersTools(t *testing.T) {
	all := []Entry{entry("git", "git_log", "Shows the commit logs."), entry("k8s", "pods_log", "Get the logs of a pod."),
		entry("db", "query", "Run a read-only SQL query.")}
	x := New()
	if got := names(x.Search(t.Context(), all, Query{Text: "logs"})); !slices.Equal(got, []string{"git__git_log", "k8s__pods_log"}) &&
		!slices.Equal(got, []string{"k8s__pods_log", "git__git_log"}) {
		t.Fatalf("both log tools expected, got %v", got)
	}
	// Another caller sees only the cluster's tools: the same index answers it.
	if got := names(x.Search(t.Context(), all[1:], Query{Text: "commit logs"})); !slices.Equal(got, []string{"k8s__pods_log"}) {
		t.Errorf("a tool the caller may not use was returned: %v", got)
	}
	if got := names(x.Search(t.Context(), all, Query{Text: "logs", Servers: []string{"git"}})); !slices.Equal(got, []string{"git__git_log"}) {
		t.Errorf("servers filter: got %v", got)
	}
	if got := x.Search(t.Context(), all, Query{Text: "weather forecast"}); len(got.Tools) != 0 || got.Matched != 0 {
		t.Errorf("no tool matches, got %v", names(got))
	}
}

func TestSearchFollowsChangedDefinitions(t *testing.T) {
	x := New()
	v1 := []Entry{entry("s", "fetch", "Fetches a URL.")}
	if got := names(x.Search(t.Context(), v1, Query{Text: "weather"})); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
	v2 := []Entry{entry("s", "fetch", "Fetches the weather forecast for a city."), entry("s", "alerts", "Weather alerts.")}
	got := x.Search(t.Context(), v2, Query{Text: "weather"})
	if len(got.Tools) != 2 || got.Tools[0].Description == "Fetches a URL." {
		t.Errorf("changed and new tools not indexed: %+v", got.Tools)
	}
}

func TestSearchExactNameFirst(t *testing.T) {
	all := []Entry{entry("a", "list_pods", "List pods in a namespace."), entry("a", "pods_top", "Pods resource usage of pods."),
		entry("b", "list", "List keys.")}
	if got := names(New().Search(t.Context(), all, Query{Text: "a__list_pods"})); len(got) == 0 || got[0] != "a__list_pods" {
		t.Errorf("exposed name: %v", got)
	}
	if got := names(New().Search(t.Context(), all, Query{Text: "list"})); len(got) == 0 || got[0] != "b__list" {
		t.Errorf("tool name: %v", got)
	}
}

func TestSearchBudgetAndLimit(t *testing.T) {
	var all []Entry
	for i := range 20 {
		all = append(all, entry("s", fmt.Sprintf("search_%02d", i), "Searches documents."))
	}
	x := New()
	res := x.Search(t.Context(), all, Query{Text: "search documents", Limit: 3})
	if res.Returned != 3 || len(res.Tools) != 3 || res.Matched != 20 || res.Truncated {
		t.Errorf("limit 3: %+v", res)
	}
	one := Tokens(res.Tools[0])
	res = x.Search(t.Context(), all, Query{Text: "search documents", MaxSchemaTokens: 2*one + one/2})
	if res.Returned != 2 || !res.Truncated || res.TokensUsed != 2*one || res.TokensUsed > res.MaxSchemaTokens {
		t.Errorf("budget for 2.5 tools: returned %d, truncated %v, used %d of %d", res.Returned, res.Truncated, res.TokensUsed, res.MaxSchemaTokens)
	}
	if res := x.Search(t.Context(), all, Query{Text: "search", Limit: 500, MaxSchemaTokens: 1 << 20}); res.Returned != 20 {
		t.Errorf("limit is capped at %d, all 20 fit: returned %d", MaxLimit, res.Returned)
	}
}

func TestSearchTypedSchema(t *testing.T) {
	typed := mcp.NewTool("create_event", mcp.WithDescription("Create a calendar event."),
		mcp.WithString("attendees", mcp.Description("Who to invite")))
	all := []Entry{{Server: "cal", Name: "create_event", Tool: typed}}
	res := New().Search(t.Context(), all, Query{Text: "invite people"})
	if len(res.Tools) != 1 || !json.Valid(res.Tools[0].InputSchema) {
		t.Fatalf("a typed schema's parameter descriptions are searched and returned: %+v", res)
	}
}

// TestSearchConcurrent runs searches of two callers with different views,
// one of them changing, in parallel (go test -race).
func TestSearchConcurrent(t *testing.T) {
	x := New()
	base := []Entry{entry("a", "one", "First tool."), entry("a", "two", "Second tool.")}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				view := base
				if g%2 == 1 {
					view = append(slices.Clone(base), entry("b", fmt.Sprintf("t%d", i%5), "Another tool."))
				}
				if res := x.Search(t.Context(), view, Query{Text: "tool"}); res.Returned != len(view) {
					t.Errorf("caller %d: %d of %d tools", g, res.Returned, len(view))
					return
				}
			}
		}()
	}
	wg.Wait()
}
