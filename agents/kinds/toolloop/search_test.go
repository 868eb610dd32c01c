package toolloop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// searchToolset is a toolset of n tools of server s (s__t00 ...) and the
// sub-agent helper.
func searchToolset(n int) *toolset {
	ts := &toolset{refs: map[string]toolRef{}}
	for i := range n {
		name := "s__t" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		ts.refs[name] = toolRef{server: "s.x", tool: strings.TrimPrefix(name, "s__")}
		ts.defs = append(ts.defs, llm.Tool{Name: name, Description: "tool " + name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	ts.refs["helper"] = toolRef{agent: "helper"}
	ts.defs = append(ts.defs, llm.Tool{Name: "helper", Description: "an agent", InputSchema: json.RawMessage(subAgentSchema)})
	return ts
}

func names(tools []llm.Tool) string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

func TestModelSearchPrepare(t *testing.T) {
	for _, c := range []struct {
		name   string
		ts     config.ToolSearch
		tools  int
		search bool
	}{
		{"off", config.ToolSearch{Mode: config.ToolSearchOff, MaxTools: 2}, 5, false},
		{"auto at max_tools", config.ToolSearch{Mode: config.ToolSearchAuto, MaxTools: 6}, 5, false}, // 5 tools and the agent
		{"auto past max_tools", config.ToolSearch{Mode: config.ToolSearchAuto, MaxTools: 5}, 5, true},
		{"always", config.ToolSearch{Mode: config.ToolSearchAlways, MaxTools: 40}, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := newModelSearch(c.ts, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ts := searchToolset(c.tools)
			s.prepare(ts)
			if (ts.search != nil) != c.search {
				t.Fatalf("searching = %v, want %v", ts.search != nil, c.search)
			}
			if c.search && (len(ts.search) != c.tools+1 || ts.search[0].Tool.Name != "taa" || ts.search[c.tools].Tool.Name != "helper") {
				t.Errorf("entries %+v", ts.search)
			}
		})
	}
}

// TestModelSearchOffered: the model is offered search_tools, the
// always_offer tools (by the model's name or <server>__<tool>), and what
// its searches found or it called, read from the conversation.
func TestModelSearchOffered(t *testing.T) {
	s, err := newModelSearch(config.ToolSearch{Mode: config.ToolSearchAlways, AlwaysOffer: []string{"s.x__tab", "helper"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := searchToolset(30)
	s.prepare(ts)
	msgs := []llm.Message{{Role: llm.RoleUser, Text: "go"}}
	if got := names(s.offered(ts, msgs)); got != "search_tools,s__tab,helper" {
		t.Fatalf("first turn offers %s", got)
	}
	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "search_tools"}, {ID: "2", Name: "search_tools"}, {ID: "3", Name: "s__tbb"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "1", Text: `{"query":"q","tools":[{"name":"s__tac"},{"name":"s__nope"}]}`},
		llm.Message{Role: llm.RoleTool, ToolCallID: "2", IsError: true, Text: `{"tools":[{"name":"s__tad"}]}`},
		llm.Message{Role: llm.RoleTool, ToolCallID: "3", Text: `{"tools":[{"name":"s__tae"}]}`}, // not a search's result
	)
	if got := names(s.offered(ts, msgs)); got != "search_tools,s__tab,s__tac,s__tbb,helper" {
		t.Fatalf("next turn offers %s", got)
	}
}
