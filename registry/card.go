package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// Server cards and the AI catalog. The format is the MCP
// server-card extension's (SEP-2127, schema v2 of
// modelcontextprotocol/experimental-ext-server-card): identity and how to
// connect, never the primitives (tools are listed at run time) and never a
// secret. A card is built from what the registry entry holds, so the two
// documents cannot disagree.

const (
	// CardSchemaURL is the schema a card declares.
	CardSchemaURL = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
	// CardMediaType is a card's Content-Type and its type in the catalog.
	CardMediaType = "application/mcp-server-card+json"
	// CatalogMediaType is the AI catalog's media type.
	CatalogMediaType = "application/ai-catalog+json"
	// CatalogSpecVersion is the AI Catalog specification version written.
	CatalogSpecVersion = "1.0"
	// ModelMetaKey holds the agent model's capabilities in a card's _meta
	// (the card schema has no field for them; the registry entry's
	// capabilities).
	ModelMetaKey = "pallasgw/model"
	// CardExtensionKey holds the whole card in a catalog entry's extensions.
	CardExtensionKey = "pallasgw/server-card"
)

// Card is an MCP server card.
type Card struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	Icons       []CardIcon     `json:"icons,omitempty"`
	Remotes     []CardRemote   `json:"remotes"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// CardIcon is an icon as the card schema spells it (sizes is a list).
type CardIcon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
}

// CardRemote is how to connect.
type CardRemote struct {
	Type                      string       `json:"type"`
	URL                       string       `json:"url"`
	Headers                   []CardHeader `json:"headers,omitempty"`
	SupportedProtocolVersions []string     `json:"supportedProtocolVersions,omitempty"`
}

// CardHeader describes a header the client must send: its name only,
// never a value.
type CardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// Catalog is the AI catalog (/.well-known/ai-catalog.json).
type Catalog struct {
	SpecVersion string         `json:"specVersion"`
	Host        CatalogHost    `json:"host"`
	Entries     []CatalogEntry `json:"entries"`
}

// CatalogHost names the catalog's operator (the config's name).
type CatalogHost struct {
	DisplayName string `json:"displayName"`
}

// CatalogEntry points at one agent's card and carries a copy of it.
type CatalogEntry struct {
	Identifier string         `json:"identifier"`
	Type       string         `json:"type"`
	URL        string         `json:"url"`
	UpdatedAt  string         `json:"updatedAt"`
	Extensions map[string]any `json:"extensions"`
}

// card builds the URL-less card of an entry.
func card(e Entry, authRequired bool) Card {
	s := e.Server
	c := Card{Schema: CardSchemaURL, Name: s.Name, Version: s.Version, Description: s.Description, Title: s.Title}
	if c.Description == "" {
		// Required by the schema; the title is the best the config knows.
		c.Description = s.Title
	}
	for _, i := range s.Icons {
		ci := CardIcon{Src: i.Src, MIMEType: i.MIMEType}
		if i.Sizes != "" {
			ci.Sizes = strings.Fields(i.Sizes) // HTML sizes syntax: space-separated
		}
		c.Icons = append(c.Icons, ci)
	}
	r := CardRemote{Type: "streamable-http", SupportedProtocolVersions: slices.Clone(mcp.ValidProtocolVersions)}
	if authRequired {
		r.Headers = []CardHeader{{Name: "Authorization", Description: "Bearer token issued by the gateway's operator", IsRequired: true, IsSecret: true}}
	}
	c.Remotes = []CardRemote{r}
	if s.Capabilities != nil {
		c.Meta = map[string]any{ModelMetaKey: s.Capabilities}
	}
	return c
}

// authRequired is true when the gateway itself checks a bearer (tokens or
// jwt mode); in passthrough mode it does not.
func authRequired(c *config.Config) bool {
	return c.Auth.Mode != "" && c.Auth.Mode != "passthrough"
}

// Card renders agent's card with its MCP URL; ok is false for an unknown
// agent.
func (r *Registry) Card(agent, mcpURL string) (Card, bool) {
	i, ok := r.index[agent]
	if !ok {
		return Card{}, false
	}
	c := r.entries[i].card
	c.Remotes = slices.Clone(c.Remotes)
	c.Remotes[0].URL = mcpURL
	return c, true
}

// CardJSON renders agent's card as JSON, with its ETag (a strong validator
// of the bytes).
func (r *Registry) CardJSON(agent, mcpURL string) (body []byte, etag string, ok bool) {
	c, ok := r.Card(agent, mcpURL)
	if !ok {
		return nil, "", false
	}
	body = indentJSON(c)
	return body, ETag(body), true
}

// Catalog renders the AI catalog: every agent, in name order, with its
// card's URL (cardURL) and the card itself (on mcpURL).
func (r *Registry) Catalog(host string, mcpURL, cardURL func(agent string) string) Catalog {
	cat := Catalog{SpecVersion: CatalogSpecVersion, Host: CatalogHost{DisplayName: r.name}, Entries: make([]CatalogEntry, len(r.entries))}
	publisher := publisherOf(host)
	for i, t := range r.entries {
		c, _ := r.Card(t.agent, mcpURL(t.agent))
		cat.Entries[i] = CatalogEntry{
			Identifier: "urn:air:" + publisher + ":mcp:" + config.Slug(t.agent),
			Type:       CardMediaType,
			URL:        cardURL(t.agent),
			UpdatedAt:  r.updatedAt,
			Extensions: map[string]any{CardExtensionKey: c},
		}
	}
	return cat
}

// CatalogJSON renders the catalog as JSON with its ETag.
func (r *Registry) CatalogJSON(host string, mcpURL, cardURL func(agent string) string) (body []byte, etag string) {
	body = indentJSON(r.Catalog(host, mcpURL, cardURL))
	return body, ETag(body)
}

// publisherOf is the urn:air publisher segment: the host name the catalog
// is served under (public_url's, or the request's), without a port.
func publisherOf(base string) string {
	h := base
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		h = u.Host
	}
	if hn, _, err := net.SplitHostPort(h); err == nil {
		h = hn
	}
	h = strings.ReplaceAll(strings.Trim(h, "[]"), ":", "-") // an IPv6 literal: no ':' inside a URN segment
	if h == "" {
		return "localhost"
	}
	return strings.ToLower(h)
}

// ETag is a strong entity tag of body: the first 128 bits of its SHA-256.
func ETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

func indentJSON(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}
