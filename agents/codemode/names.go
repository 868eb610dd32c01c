package codemode

// The names tools take in a script, and the listing that shows them.
//
// Rule: every character of a server or tool name that is not an ASCII
// letter, digit or underscore becomes "_" (so "-" and "." do); a name
// that starts with a digit gets a leading "_"; a name that is a Starlark
// or reserved Python keyword gets a trailing "_". A server whose name maps
// onto another server's, or onto a builtin of the script, is refused
// when the agent is built (CheckServers); two tools of one server that map
// onto one name are both left out of the script and named in the listing.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// Ident is name as a script names it (config.ScriptName).
func Ident(name string) string { return config.ScriptName(name) }

// CheckServers refuses servers whose script names collide with each
// other's or with a builtin's (config.CheckScriptServers).
func CheckServers(servers []string) error {
	if err := config.CheckScriptServers(servers); err != nil {
		return fmt.Errorf("code mode: %w", err)
	}
	return nil
}

// Tool is a tool a script may call.
type Tool struct {
	Server, Name string
	Description  string
	InputSchema  json.RawMessage
}

// Bindings are the tools of one script by script name, and their listing.
type Bindings struct {
	servers map[string]map[string]Tool // server ident → tool ident → tool
	order   []string                   // "server.tool", sorted
	hidden  []string                   // tools left out for a name collision
	names   map[string]string          // server ident → server
}

// Bind names tools for a script: servers are every server the script may
// reach (each is a name in the script, with or without tools), tools the
// tools it may call. Two tools of one server that take one name are both
// left out and reported in the listing.
func Bind(servers []string, tools []Tool) *Bindings {
	b := &Bindings{servers: map[string]map[string]Tool{}, names: map[string]string{}}
	for _, s := range servers {
		b.servers[Ident(s)] = map[string]Tool{}
		b.names[Ident(s)] = s
	}
	clash := map[string][]string{}
	for _, t := range tools {
		sid, tid := Ident(t.Server), Ident(t.Name)
		b.names[sid] = t.Server
		m := b.servers[sid]
		if m == nil {
			m = map[string]Tool{}
			b.servers[sid] = m
		}
		key := sid + "." + tid
		if old, dup := m[tid]; dup {
			if clash[key] == nil {
				clash[key] = []string{old.Name}
			}
			clash[key] = append(clash[key], t.Name)
			continue
		}
		m[tid] = t
	}
	for key, names := range clash {
		sid, tid, _ := strings.Cut(key, ".")
		delete(b.servers[sid], tid)
		b.hidden = append(b.hidden, fmt.Sprintf("%s: tools %s of server %s all map to this name, so none is callable",
			key, strings.Join(quoteAll(names), ", "), b.serverName(sid)))
	}
	for sid, m := range b.servers {
		for tid := range m {
			b.order = append(b.order, sid+"."+tid)
		}
	}
	sort.Strings(b.order)
	sort.Strings(b.hidden)
	return b
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func (b *Bindings) serverName(sid string) string { return b.names[sid] }

// Len is the number of callable tools.
func (b *Bindings) Len() int { return len(b.order) }

// Listing is one line per callable tool, "server.tool(arg: type, opt?:
// type) -- doc", with the tool's own names when the rule changed them, and
// a line per tool left out.
func (b *Bindings) Listing() string {
	var sb strings.Builder
	for _, key := range b.order {
		sid, tid, _ := strings.Cut(key, ".")
		t := b.servers[sid][tid]
		sb.WriteString(key)
		sb.WriteString(signature(t.InputSchema))
		if doc := shortDoc(t.Description); doc != "" {
			sb.WriteString(" -- ")
			sb.WriteString(doc)
		}
		if sid != t.Server || tid != t.Name {
			fmt.Fprintf(&sb, " [server %q, tool %q]", t.Server, t.Name)
		}
		sb.WriteByte('\n')
	}
	for _, h := range b.hidden {
		sb.WriteString("# not callable: ")
		sb.WriteString(h)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Description is run_script's description for a model: how to write a
// script, and the listing.
func (b *Bindings) Description() string {
	return descriptionHead + b.Listing()
}

// DescriptionHead is how to write a script (Description without the
// listing).
const descriptionHead = `Runs a short Starlark (Python-like) script that calls tools as functions and returns only what you need: ` +
	`use it to chain several tool calls in one step, feeding one call's result into the next, looping and filtering. ` +
	`Call a tool as server.tool(name=value, ...) (or with one dict of arguments); it returns the result decoded ` +
	`(structured content, else JSON text decoded, else the text). A tool error comes back as a value: test it with ` +
	`is_error(r) and read r.error. print() what you want to see and/or set the global result. No imports, files, ` +
	`network or clock; recursion is not allowed. Tools you may call:
`

// ToolboxDescription is run_script's description on a toolbox, whose
// tools depend on the caller: find them first.
const ToolboxDescription = `Runs a short Starlark (Python-like) script that calls the tools of this toolbox's servers as functions ` +
	`and returns only what you need: use it to chain several tool calls in one step, feeding one call's result into the ` +
	`next, looping and filtering. Each tool that get_server_tools or search_tools shows is callable as ` +
	`server.tool(name=value, ...) (or with one dict of arguments); in names, every character that is not a letter, digit ` +
	`or _ becomes _, and a Python keyword gets a trailing _ (server "my-srv", tool "get.file" is my_srv.get_file). ` +
	`A call returns the result decoded (structured content, else JSON text decoded, else the text). A tool error comes ` +
	`back as a value: test it with is_error(r) and read r.error. print() what you want to see and/or set the global ` +
	`result. No imports, files, network or clock; recursion is not allowed.`

// signature is "(a: str, b?: int)" from an input schema.
func signature(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "()"
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	// Required first, then the others, each by name.
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		opt := "?"
		if req[n] {
			opt = ""
		}
		parts[i] = n + opt + ": " + typeName(s.Properties[n].Type)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func typeName(t any) string {
	switch v := t.(type) {
	case string:
		switch v {
		case "string":
			return "str"
		case "integer":
			return "int"
		case "number":
			return "float"
		case "boolean":
			return "bool"
		case "array":
			return "list"
		case "object":
			return "dict"
		}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok && s != "null" {
				out = append(out, typeName(s))
			}
		}
		if len(out) > 0 {
			return strings.Join(out, "|")
		}
	}
	return "any"
}

// shortDoc is a description's first sentence, at most 100 bytes.
func shortDoc(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if len(d) > 100 {
		d = strings.ToValidUTF8(d[:97], "") + "..."
	}
	return d
}

// ToolsOf turns mcp tools of server into Tools.
func ToolsOf(server string, tools []mcp.Tool) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		schema := t.RawInputSchema
		if schema == nil {
			schema, _ = json.Marshal(t.InputSchema)
		}
		out[i] = Tool{Server: server, Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	return out
}
