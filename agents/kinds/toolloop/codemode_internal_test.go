package toolloop

import (
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// With tool search on, a code-mode model is offered run_script over what
// its searches found (and always_offer), plus search_tools and the
// sub-agents as tools.
func TestCodeModeListsWhatSearchFound(t *testing.T) {
	s, err := newModelSearch(config.ToolSearch{Mode: config.ToolSearchAlways, AlwaysOffer: []string{"s.x__tab"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &llmRunner{a: &agent{&agents.Base{Config: &config.Agent{Servers: []string{"s.x"}}}}, search: s, code: codemode.NewRunner(config.CodeMode{})}
	ts := searchToolset(30)
	s.prepare(ts)
	msgs := []llm.Message{{Role: llm.RoleUser, Text: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "search_tools"}}},
		{Role: llm.RoleTool, ToolCallID: "1", Text: `{"tools":[{"name":"s__tac"},{"name":"helper"}]}`}}
	tools := r.modelTools(ts, msgs)
	if got := names(tools); got != "run_script,search_tools,helper" {
		t.Fatalf("offered %s", got)
	}
	listing := tools[0].Description
	if !strings.Contains(listing, "s_x.tab() -- tool s__tab") || !strings.Contains(listing, "s_x.tac()") || strings.Contains(listing, "s_x.tad") {
		t.Errorf("listing:\n%s", listing)
	}
	if ts.script.Len() != 2 {
		t.Errorf("a script may call %d tools, want 2", ts.script.Len())
	}
}
