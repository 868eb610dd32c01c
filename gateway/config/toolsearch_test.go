package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestToolSearchForms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(`name: t
mcp:
  servers:
    s: {url: "http://127.0.0.1:9/mcp"}
agents:
  px: {kind: proxy, servers: [s], tool_search: true}
  off: {kind: proxy, servers: [s], tool_search: false}
  plain: {servers: [s]}
  llm: {servers: [s], tool_search: {mode: off, max_tools: 5, always_offer: ["s__get_*"]}}
  short: {servers: [s], tool_search: false}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]ToolSearch{
		"px":    {Mode: ToolSearchAuto, MaxTools: DefaultSearchMaxTools},
		"off":   {Mode: ToolSearchOff, MaxTools: DefaultSearchMaxTools},
		"plain": {MaxTools: DefaultSearchMaxTools},
		"llm":   {Mode: ToolSearchOff, MaxTools: 5, AlwaysOffer: []string{"s__get_*"}},
		"short": {Mode: ToolSearchOff, MaxTools: DefaultSearchMaxTools},
	} {
		got := c.Agents[name].ToolSearch
		if got.Mode != want.Mode || got.MaxTools != want.MaxTools || !slices.Equal(got.AlwaysOffer, want.AlwaysOffer) {
			t.Errorf("%s: tool_search %+v, want %+v", name, got, want)
		}
		if got.On() != (want.Mode == ToolSearchAuto || want.Mode == ToolSearchAlways) {
			t.Errorf("%s: On() = %v", name, got.On())
		}
	}
}
