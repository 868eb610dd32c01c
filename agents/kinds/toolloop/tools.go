package toolloop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/codemode"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// toolRef is where a model-facing tool name leads: a downstream server's
// tool, or another agent.
type toolRef struct {
	server, tool string // downstream tool
	title        string // its title, for tool search
	agent        string // sub-agent
}

// fullName is the tool as rules name it: <server>__<tool>, or the agent.
func (r toolRef) fullName() string {
	if r.agent != "" {
		return r.agent
	}
	return r.server + "__" + r.tool
}

// toolset is the tools offered to the model in one run, with the reverse
// map from sanitised names.
type toolset struct {
	defs []llm.Tool
	refs map[string]toolRef
	// search holds the tools as the agent's search index takes them when
	// the run searches (search.go); nil: the model is offered every tool.
	search []toolsearch.Entry
	// script is what a code-mode run's scripts may call on this turn
	// (codemode.go); nil otherwise.
	script *codemode.Bindings
}

// buildToolset lists the allowed tools of the agent's servers (as
// <server>__<tool>) and its sub-agents. A server whose tools cannot be
// listed is skipped; its failure is returned so the model can be told.
func (a *agent) buildToolset(ctx context.Context, inbound http.Header, filter policy.ToolFilter, caller string) (*toolset, []string) {
	ts := &toolset{refs: map[string]toolRef{}}
	var problems []string
	for _, srv := range a.Config.Servers {
		if d := a.Callers().AllowServer(caller, srv); !d.Allowed {
			continue
		}
		hdr, err := a.Outbound(ctx, srv, inbound, nil)
		var tools []mcp.Tool
		if err == nil {
			tools, err = a.Downstream().Tools(ctx, srv, hdr)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("server %s is unavailable: %v", srv, err))
			continue
		}
		for _, t := range tools {
			full := srv + "__" + t.Name
			if !filter.Allowed(full) || !a.Callers().AllowTool(caller, srv, t.Name).Allowed {
				continue
			}
			name := config.SanitizeToolName(full)
			if _, dup := ts.refs[name]; dup {
				problems = append(problems, fmt.Sprintf("tool %s of server %s hidden: its name collides after sanitising", t.Name, srv))
				continue
			}
			ts.refs[name] = toolRef{server: srv, tool: t.Name, title: toolTitle(t)}
			ts.defs = append(ts.defs, llm.Tool{Name: name, Description: t.Description, InputSchema: toolsearch.InputSchema(t)})
		}
	}
	for _, sub := range a.Config.Agents {
		name := config.SanitizeToolName(sub)
		sa := a.Agent(sub)
		ts.refs[name] = toolRef{agent: sub}
		ts.defs = append(ts.defs, llm.Tool{Name: name, Description: sa.ToolDescription(), InputSchema: json.RawMessage(subAgentSchema)})
	}
	sort.Slice(ts.defs, func(i, j int) bool { return ts.defs[i].Name < ts.defs[j].Name })
	return ts, problems
}

// toolTitle is a tool's display title: its title, else its annotations'.
func toolTitle(t mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	return t.Annotations.Title
}

const subAgentSchema = `{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent."}},"required":["message"]}`

// resultToMessage turns a downstream tool result into the tool message fed
// back to the model: text as text, images as images, anything else as JSON,
// cut at max bytes with a note.
func resultToMessage(callID string, r *mcp.CallToolResult, max int) llm.Message {
	m := llm.Message{Role: llm.RoleTool, ToolCallID: callID, IsError: r.IsError}
	var text []byte
	for _, c := range r.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			text = appendPart(text, v.Text)
		case mcp.ImageContent:
			if b, err := base64.StdEncoding.DecodeString(v.Data); err == nil {
				m.Images = append(m.Images, llm.Image{MIMEType: v.MIMEType, Data: b})
			} else {
				text = appendPart(text, "[image with invalid base64 omitted]")
			}
		default:
			b, _ := json.Marshal(v)
			text = appendPart(text, string(b))
		}
	}
	if len(r.Content) == 0 && r.StructuredContent != nil {
		b, _ := json.Marshal(r.StructuredContent)
		text = appendPart(text, string(b))
	}
	m.Text = agents.Cut(string(text), max)
	return m
}

func appendPart(b []byte, s string) []byte {
	if len(b) > 0 {
		b = append(b, '\n')
	}
	return append(b, s...)
}

// narrow keeps the tools whose name (<server>__<tool>, or the agent's name
// for a sub-agent) the call's tools globs match (overrides.tools).
func narrow(c *Call, ts *toolset) *toolset {
	if !c.ToolsNarrowed() {
		return ts
	}
	out := &toolset{refs: map[string]toolRef{}}
	for _, d := range ts.defs {
		ref := ts.refs[d.Name]
		if c.ToolOffered(ref.fullName()) {
			out.defs = append(out.defs, d)
			out.refs[d.Name] = ref
		}
	}
	return out
}
