package toolsearch

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// catalog reads testdata/catalog.json as the entries of an agent that
// prefixes its tools with their server.
func catalog(t testing.TB) []Entry {
	t.Helper()
	b, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Servers []struct {
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, s := range c.Servers {
		for _, raw := range s.Tools {
			var tool mcp.Tool
			var schema struct {
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if err := errors.Join(json.Unmarshal(raw, &tool), json.Unmarshal(raw, &schema)); err != nil {
				t.Fatal(err)
			}
			// As the downstream clients hand tools over: the schema as sent.
			tool.InputSchema, tool.RawInputSchema = mcp.ToolInputSchema{}, schema.InputSchema
			out = append(out, Entry{Server: s.Name, Name: s.Name + "__" + tool.Name, Tool: tool})
		}
	}
	return out
}

// TestRankingQuality runs the frozen queries of testdata/queries.json
// against the catalog: the expected tool must be in the top 5 for at least
// 90% of them.
func TestRankingQuality(t *testing.T) {
	entries := catalog(t)
	if len(entries) < 300 {
		t.Fatalf("catalog has %d tools, want at least 300", len(entries))
	}
	b, err := os.ReadFile("testdata/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var queries []struct {
		Query  string `json:"query"`
		Expect string `json:"expect"`
	}
	if err := json.Unmarshal(b, &queries); err != nil {
		t.Fatal(err)
	}
	if len(queries) < 30 {
		t.Fatalf("%d queries, want at least 30", len(queries))
	}
	x := New()
	hits := 0
	for _, q := range queries {
		res := x.Search(entries, Query{Text: q.Query, Limit: 5, MaxSchemaTokens: 1 << 20})
		rank := -1
		var got []string
		for i, h := range res.Tools {
			got = append(got, h.Name)
			if h.Name == q.Expect {
				rank = i + 1
			}
		}
		if rank > 0 {
			hits++
		} else {
			t.Logf("miss: %q wants %s, got %v", q.Query, q.Expect, got)
		}
	}
	share := float64(hits) / float64(len(queries))
	t.Logf("expected tool in the top 5 for %d of %d queries (%.0f%%)", hits, len(queries), 100*share)
	if share < 0.9 {
		t.Errorf("top-5 share %.0f%%, want at least 90%%", 100*share)
	}
}
