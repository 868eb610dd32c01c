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
