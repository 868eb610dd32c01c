// Package registry owns the agent registry document (the
// /.well-known/mcp/server.json served on the main port and the legacy
// registry port), and the server cards and AI catalog made from it
// (card.go). It builds the document's immutable parts from a config
// once per snapshot and fills in the remote URLs per request, because they
// depend on how the caller reached the gateway. It does not route requests
// or decide which URL base to trust; the gateway passes a URL function.
package registry

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// SchemaURL is the server.json schema the entries declare.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// Document is the registry response body.
type Document struct {
	Servers []Entry `json:"servers"`
}

// Entry is one servers[] element.
type Entry struct {
	Server Server         `json:"server"`
	Meta   map[string]any `json:"_meta"`
}

// Server describes one agent.
type Server struct {
	Schema       string        `json:"$schema"`
	Name         string        `json:"name"`
	Title        string        `json:"title,omitempty"`
	Description  string        `json:"description,omitempty"`
	Version      string        `json:"version"`
	Icons        []config.Icon `json:"icons,omitempty"`
	Remotes      []Remote      `json:"remotes"`
	Capabilities *Capabilities `json:"capabilities,omitempty"`
}

// Remote is a connection endpoint.
type Remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Capabilities are the agent model's published capabilities.
type Capabilities struct {
	Model           string `json:"model"`
	Vision          bool   `json:"vision"`
	ContextWindow   int    `json:"context_window,omitempty"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
}

// Registry holds the per-snapshot templates of the document, the agents'
// server cards and the AI catalog (card.go).
type Registry struct {
	name      string // the config's name: the catalog's host
	updatedAt string // when the snapshot loaded, RFC 3339
	entries   []template
	index     map[string]int // agent → entries index
}

type template struct {
	agent string
	port  int
	entry Entry
	card  Card // without its remote URL
}

// New builds the registry of a config loaded at loadedAt.
func New(c *config.Config, loadedAt time.Time) *Registry {
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	meta := map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{
		"status": "active", "updatedAt": loadedAt.UTC().Format(time.RFC3339), "isLatest": true,
	}}
	r := &Registry{name: c.Name, updatedAt: loadedAt.UTC().Format(time.RFC3339), index: make(map[string]int, len(names))}
	auth := authRequired(c)
	for _, n := range names {
		a := c.Agents[n]
		r.entries = append(r.entries, template{agent: n, port: a.Port, entry: Entry{
			Server: Server{
				Schema:       SchemaURL,
				Name:         c.Namespace + "/" + config.Slug(n),
				Title:        a.Title,
				Description:  a.Description,
				Version:      c.Version,
				Icons:        a.Icons,
				Capabilities: capabilities(c, a),
			},
			Meta: meta,
		}})
		t := &r.entries[len(r.entries)-1]
		t.card = card(t.entry, auth)
		r.index[n] = len(r.entries) - 1
	}
	return r
}

func capabilities(c *config.Config, a *config.Agent) *Capabilities {
	if a.Model == "" {
		return nil
	}
	caps, ok := c.Models.Capabilities[a.Model]
	if !ok {
		return nil
	}
	_, model := config.SplitModel(a.Model)
	return &Capabilities{Model: model, Vision: caps.Vision, ContextWindow: caps.ContextWindow, MaxOutputTokens: caps.MaxOutputTokens}
}

// URLFunc returns the streamable-http URL of an agent with its legacy port
// (0 = none).
type URLFunc func(agent string, port int) string

// Document renders the document with the given URLs.
func (r *Registry) Document(url URLFunc) Document {
	d := Document{Servers: make([]Entry, len(r.entries))}
	for i, t := range r.entries {
		e := t.entry
		e.Server.Remotes = []Remote{{Type: "streamable-http", URL: url(t.agent, t.port)}}
		d.Servers[i] = e
	}
	return d
}

// JSON renders the document as indented JSON.
func (r *Registry) JSON(url URLFunc) []byte {
	b, _ := json.MarshalIndent(r.Document(url), "", "  ")
	return append(b, '\n')
}
