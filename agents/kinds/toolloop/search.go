package toolloop

// An llm agent's tool search (tool_search on kind llm). When a run
// searches (mode always, or auto with more tools than max_tools), the
// model is first offered search_tools and the always_offer tools instead
// of every tool; each tool a search returns is offered, as a real tool,
// from the next model turn of that run on (no call_tool indirection).
//
// The run's tools are the toolset the loop builds anyway (buildToolset:
// the lists as the downstream clients hand them, tool pins applied, then
// the agent's tools rules and the caller's policy, then the call's tools
// override), so a search ranks exactly what the caller may call. The
// ranking is the agent's one toolsearch.Index, which re-indexes a tool
// whose definition changed on the search that first sees it; a reload
// builds a new agent and with it a new index.
//
// What the model has found is read back from the conversation itself
// (foundTools): the names in the results of its search_tools calls, and
// the tools it called. A run continued from an input-required checkpoint
// therefore offers what it offered before, with nothing else to carry.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// modelSearch is an llm agent's tool_search: when a run searches, which
// tools are offered from the start, and the agent's index.
type modelSearch struct {
	mode     string
	maxTools int
	always   policy.Globs // always_offer, on the model's name or <server>__<tool>
	index    *toolsearch.Index
}

// newModelSearch returns the agent's tool search, nil when it is off; emb
// (nil: none) adds the ranking by embeddings, its vectors kept in vecs.
func newModelSearch(ts config.ToolSearch, emb toolsearch.Embedder, vecs *toolsearch.Vectors) (*modelSearch, error) {
	if !ts.On() {
		return nil, nil
	}
	g, err := policy.CompileGlobs(ts.AlwaysOffer)
	if err != nil {
		return nil, fmt.Errorf("tool_search.always_offer: %w", err)
	}
	x := toolsearch.New()
	if emb != nil {
		x.UseEmbeddings(emb, vecs)
	}
	return &modelSearch{mode: ts.Mode, maxTools: ts.MaxTools, always: g, index: x}, nil
}

// prepare marks ts as a searching run's tools (ts.search holds its
// entries for the index) when the agent searches and, in mode auto, has
// more tools than max_tools.
func (s *modelSearch) prepare(ts *toolset) {
	if s == nil || len(ts.defs) == 0 || s.mode == config.ToolSearchAuto && len(ts.defs) <= s.maxTools {
		return
	}
	ts.search = make([]toolsearch.Entry, 0, len(ts.defs))
	for _, d := range ts.defs {
		ref := ts.refs[d.Name]
		own := ref.tool // ranked by the server's own name, as toolbox and proxy rank
		if ref.agent != "" {
			own = ref.agent
		}
		ts.search = append(ts.search, toolsearch.Entry{Server: ref.server, Name: d.Name,
			Tool: mcp.Tool{Name: own, Title: ref.title, Description: d.Description, RawInputSchema: d.InputSchema}})
	}
}

// searchToolDef is search_tools as the model is offered it.
var searchToolDef = llm.Tool{Name: toolsearch.ToolName, Description: toolsearch.ToolDescription, InputSchema: json.RawMessage(toolsearch.ToolSchema)}

// searchNote is added to a searching run's system prompt.
const searchNote = "You can use %d tools, but only a few are listed. Call search_tools with what you want to do " +
	"to find the others; every tool it returns can be called directly from your next turn."

// offered is what the model of a searching run is offered on the turn
// that follows msgs: search_tools, the always_offer tools, and every tool
// found or called so far, in the toolset's order.
func (s *modelSearch) offered(ts *toolset, msgs []llm.Message) []llm.Tool {
	found := foundTools(msgs)
	out := []llm.Tool{searchToolDef}
	for _, d := range ts.defs {
		if found[d.Name] || s.always.Match(d.Name) || s.always.Match(ts.refs[d.Name].fullName()) {
			out = append(out, d)
		}
	}
	return out
}

// foundTools are the tool names the results of the search_tools calls in
// msgs returned, and those the model called.
func foundTools(msgs []llm.Message) map[string]bool {
	searches, found := map[string]bool{}, map[string]bool{}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			for _, tc := range m.ToolCalls {
				if tc.Name == toolsearch.ToolName {
					searches[tc.ID] = true
				} else {
					found[tc.Name] = true
				}
			}
		case llm.RoleTool:
			if !searches[m.ToolCallID] || m.IsError {
				continue
			}
			var r foundResult
			if json.Unmarshal([]byte(m.Text), &r) == nil {
				for _, t := range r.Tools {
					found[t.Name] = true
				}
			}
		}
	}
	return found
}

// foundResult is a search's answer as the model reads it: the tools by
// name, best first, without their schemas (the next turn offers them).
type foundResult struct {
	Query     string      `json:"query"`
	Tools     []foundTool `json:"tools"`
	Matched   int         `json:"total_matches"`
	Truncated bool        `json:"truncated,omitempty"`
	Note      string      `json:"note"`
}

type foundTool struct {
	Name        string `json:"name"`
	Server      string `json:"server,omitempty"` // none for a sub-agent
	Description string `json:"description"`
}

// searchTools runs the model's search_tools call over the run's tools.
func (r *llmRunner) searchTools(ctx context.Context, c *Call, ts *toolset, tc llm.ToolCall) llm.Message {
	fail := func(format string, args ...any) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, IsError: true, Text: fmt.Sprintf(format, args...)}
	}
	raw, err := objectArguments(tc.Arguments)
	if err != nil {
		return fail("tool %s: arguments are not a JSON object: %v", tc.Name, err)
	}
	var args map[string]any
	if raw != nil {
		_ = json.Unmarshal(raw, &args) // an object (objectArguments)
	}
	q, err := toolsearch.ParseArgs(args, func(s string) bool { return slices.Contains(r.a.Config.Servers, s) })
	if err != nil {
		return fail("%s: invalid arguments: %v", toolsearch.ToolName, err)
	}
	c.Progress.Send(r.a.Name + " search: " + q.Text)
	res := r.search.index.Search(ctx, ts.search, q)
	out := foundResult{Query: res.Query, Tools: make([]foundTool, 0, len(res.Tools)), Matched: res.Matched, Truncated: res.Truncated,
		Note: "These tools can be called directly from your next turn."}
	for _, h := range res.Tools {
		out.Tools = append(out.Tools, foundTool{Name: h.Name, Server: h.Server, Description: h.Description})
	}
	if len(out.Tools) == 0 {
		out.Note = "No tool matched; try other words."
	}
	b, _ := json.Marshal(out) // strings and numbers: always encodes
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Text: string(b)}
}

// searching reports whether tc is a searching run's search_tools call.
func searching(ts *toolset, tc llm.ToolCall) bool {
	return ts.search != nil && tc.Name == toolsearch.ToolName
}

// modelTools are the tools a model turn is offered: every tool, or for a
// searching run those of offered; in code mode, run_script over them.
func (r *llmRunner) modelTools(ts *toolset, msgs []llm.Message) []llm.Tool {
	offered := ts.defs
	if ts.search != nil {
		offered = r.search.offered(ts, msgs)
	}
	if r.code != nil {
		return r.codeTools(offered, ts) // codemode.go
	}
	return offered
}
