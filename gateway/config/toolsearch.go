package config

import (
	"fmt"
	"path"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Tool search modes (ToolSearch.Mode).
const (
	ToolSearchOff    = "off"
	ToolSearchAuto   = "auto"
	ToolSearchAlways = "always"
	// SearchToolName is the tool that searches an agent's tools.
	SearchToolName = "search_tools"
	// DefaultSearchMaxTools is tool_search.max_tools's default.
	DefaultSearchMaxTools = 40
)

// ToolSearch is an agent's tool_search. On a proxy, true adds search_tools
// to the tools it re-exposes. On an llm agent, it decides whether the model
// is first offered search_tools (and the always_offer tools) instead of
// every tool: true is {mode: auto}, false {mode: off}.
type ToolSearch struct {
	// Mode is off (default), auto (search when the agent has more than
	// MaxTools tools) or always.
	Mode string `yaml:"mode"`
	// MaxTools is auto's threshold (llm); default 40.
	MaxTools int `yaml:"max_tools"`
	// AlwaysOffer are globs of tool names, as the model sees them
	// (<server>__<tool>, sub-agent names), offered from the first turn even
	// when searching (llm); default none.
	AlwaysOffer []string `yaml:"always_offer"`
	// Embeddings adds a ranking by embeddings, fused with the lexical one;
	// default none (lexical ranking only).
	Embeddings *SearchEmbeddings `yaml:"embeddings"`
}

// SearchEmbeddings is tool_search.embeddings: the tools and each query are
// embedded through a provider's OpenAI-compatible /embeddings endpoint.
type SearchEmbeddings struct {
	// Provider is a key of models.providers of type openai (Anthropic has
	// no embeddings API); required.
	Provider string `yaml:"provider"`
	// Model is the embedding model, e.g. text-embedding-3-small or, on
	// Ollama, nomic-embed-text; required.
	Model string `yaml:"model"`
}

// On reports whether the agent searches (or, on a proxy, offers
// search_tools).
func (t ToolSearch) On() bool { return t.Mode == ToolSearchAuto || t.Mode == ToolSearchAlways }

// UnmarshalYAML takes true or false for {mode: auto} or {mode: off}.
func (t *ToolSearch) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var on bool
		if err := n.Decode(&on); err != nil {
			return err
		}
		t.Mode = ToolSearchOff
		if on {
			t.Mode = ToolSearchAuto
		}
		return nil
	}
	type plain ToolSearch
	return n.Decode((*plain)(t))
}

// boolShorthand marks a config type whose mapping may be written as true or
// false (checkKnownKeys accepts the scalar).
type boolShorthand interface{ boolShorthand() }

func (*ToolSearch) boolShorthand() {}

var typeOfBoolShorthand = reflect.TypeOf((*boolShorthand)(nil)).Elem()

// validateToolSearch checks an agent's tool_search.
func (p *parser) validateToolSearch(c *Config, a *Agent, key []string) {
	ts := a.ToolSearch
	path := append(append([]string{}, key...), "tool_search")
	if ts.Embeddings != nil {
		p.validateEmbeddings(c, a, append(path, "embeddings"))
		if a.Kind == KindToolbox && ts.Mode == "" && len(ts.AlwaysOffer) == 0 {
			return // a toolbox takes tool_search: {embeddings: ...} alone
		}
	}
	switch ts.Mode {
	case "", ToolSearchOff, ToolSearchAuto, ToolSearchAlways:
	default:
		p.addPath(append(path, "mode"), fmt.Sprintf("unknown mode %q (want off, auto or always)", ts.Mode))
	}
	switch a.Kind {
	case KindLLM:
		p.checkGlobs(append(path, "always_offer"), ts.AlwaysOffer)
		p.checkAlwaysOffer(a, append(path, "always_offer"))
	case KindProxy:
		if ts.MaxTools != DefaultSearchMaxTools || len(ts.AlwaysOffer) > 0 {
			p.addPath(path, "a proxy takes tool_search: true or false; max_tools and always_offer belong to kind llm")
		}
	default:
		if ts.Mode != "" {
			msg := "tool_search belongs to kinds llm and proxy"
			if a.Kind == KindToolbox {
				msg = "a toolbox always has search_tools; tool_search belongs to kinds llm and proxy"
			}
			p.addPath(path, msg)
		}
	}
}

// validateEmbeddings checks tool_search.embeddings: a provider with an
// embeddings API, a model, and a search to serve.
func (p *parser) validateEmbeddings(c *Config, a *Agent, key []string) {
	e := a.ToolSearch.Embeddings
	prov := c.Models.Providers[e.Provider]
	switch {
	case e.Provider == "":
		p.addPath(append(key, "provider"), "is required (a provider of models.providers with an embeddings API)")
	case prov == nil:
		p.addPath(append(key, "provider"), fmt.Sprintf("unknown provider %q (want one of models.providers: %s)", e.Provider, strings.Join(providerNames(c), ", ")))
	case prov.Type != ProviderOpenAI:
		p.addPath(append(key, "provider"), fmt.Sprintf("provider %q is of type %s, which has no embeddings API (want an OpenAI-compatible provider)", e.Provider, prov.Type))
	}
	if e.Model == "" {
		p.addPath(append(key, "model"), "is required (the embedding model)")
	}
	if !offersSearch(a) && a.Kind != KindToolbox {
		p.addPath(key, "serves no search: tool_search is off")
	}
}

// checkAlwaysOffer refuses an always_offer entry that can name none of
// the agent's tools, as far as the config tells them: a sub-agent's name,
// or <server>__<tool> of one of its servers (whose tools are known only
// when listed). An entry that is not a valid glob is checkGlobs' to report.
func (p *parser) checkAlwaysOffer(a *Agent, key []string) {
	for i, g := range a.ToolSearch.AlwaysOffer {
		if _, err := path.Match(g, ""); err != nil || g == "" || mayNameTool(a, g) {
			continue
		}
		p.addPath(append(append([]string{}, key...), strconv.Itoa(i)),
			fmt.Sprintf("%q names none of this agent's tools (%s)", g, toolNamesHint(a)))
	}
}

// mayNameTool reports whether glob g can match one of a's tools: a
// sub-agent (by its name or its sanitised tool name), or a name that
// starts with a server's prefix. Before its first wildcard, g's literal
// text must agree with that prefix.
func mayNameTool(a *Agent, g string) bool {
	for _, sub := range a.Agents {
		if ok, _ := path.Match(g, sub); ok {
			return true
		}
		if ok, _ := path.Match(g, SanitizeToolName(sub)); ok {
			return true
		}
	}
	lit := g
	if i := strings.IndexAny(g, `*?[\`); i >= 0 {
		lit = g[:i]
	}
	for _, s := range a.Servers {
		for _, pre := range []string{s + "__", SanitizeToolName(s) + "__"} {
			if strings.HasPrefix(lit, pre) && len(lit) > len(pre) || strings.HasPrefix(pre, lit) && lit != g {
				return true
			}
		}
	}
	return false
}

// toolNamesHint says what an llm agent's tools are called.
func toolNamesHint(a *Agent) string {
	var parts []string
	if len(a.Servers) > 0 {
		parts = append(parts, "<server>__<tool> of servers "+strings.Join(a.Servers, ", "))
	}
	if len(a.Agents) > 0 {
		parts = append(parts, "agents "+strings.Join(a.Agents, ", "))
	}
	if len(parts) == 0 {
		return "it has none"
	}
	return "its tools are " + strings.Join(parts, " and ")
}

// offersSearch reports whether the agent has a search_tools of its own:
// every toolbox, a proxy or llm agent with tool_search on.
func offersSearch(a *Agent) bool {
	return a.Kind == KindToolbox || (a.Kind == KindProxy || a.Kind == KindLLM) && a.ToolSearch.On()
}
