package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A capabilities entry that leaves out context_window or max_output_tokens
// gets the Pallas reference's defaults; a model without an entry has no
// known max_output_tokens.
func TestCapabilityDefaults(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`
name: t
models:
  providers: {openai: {}}
  capabilities:
    openai.a: {vision: true}
    openai.b: {context_window: 200000, max_output_tokens: 32000}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Models.Capabilities["openai.a"]; got.ContextWindow != 131072 || got.MaxOutputTokens != 16384 || !got.Vision {
		t.Errorf("openai.a = %+v, want the defaults 131072 and 16384", got)
	}
	if got := c.Models.Capabilities["openai.b"]; got.ContextWindow != 200000 || got.MaxOutputTokens != 32000 {
		t.Errorf("openai.b = %+v, want what was written", got)
	}
	if c.MaxOutputTokens("openai.a") != 16384 || c.MaxOutputTokens("openai.c") != 0 {
		t.Error("MaxOutputTokens")
	}
}

func TestParamProblem(t *testing.T) {
	for _, tt := range []struct {
		key  string
		v    any
		want string
	}{
		{"temperature", 0, ""}, {"temperature", 2.0, ""}, {"temperature", 2.01, "2.01 is out of range 0 to 2"},
		{"top_p", 1, ""}, {"top_p", -0.5, "-0.5 is out of range 0 to 1"}, {"top_p", "x", "must be a number"},
		{"stop", "END", ""}, {"stop", []any{"a", "b", "c", "d"}, ""}, {"stop", []any{"a", 1}, "must be a string or a list of strings"},
		{"stop", []any{"a", "b", "c", "d", "e"}, "at most 4 stop sequences (got 5)"},
		{"max_tokens", 1, ""}, {"max_tokens", 0, "must be at least 1"}, {"max_tokens", 10.5, "must be a whole number"},
		{"seed", -3, ""}, {"frequency_penalty", 2.5, "2.5 is out of range -2 to 2"},
		{"response_format", map[string]any{"type": "json_object"}, ""},
	} {
		if got := ParamProblem(tt.key, tt.v); got != tt.want {
			t.Errorf("ParamProblem(%s, %v) = %q, want %q", tt.key, tt.v, got, tt.want)
		}
	}
}

// transport, when not written, is inferred: a command is a stdio server,
// anything else http.
func TestTransportInferred(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`
name: t
mcp:
  servers:
    files: {command: npx, args: [server]}
    web: {url: "http://127.0.0.1:1/mcp"}
    old: {transport: sse, url: "http://127.0.0.1:1/sse"}
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"files": "stdio", "web": "http", "old": "sse"} {
		if got := c.MCP.Servers[name].Transport; got != want {
			t.Errorf("%s: transport %q, want %q", name, got, want)
		}
	}
}

// A .env beside the config is read when env_file is not set; the process
// environment wins over it.
func TestDotEnvBesideConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pallasgw.yaml")
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("pallasgw.yaml", "name: ${PGW_T_NAME}\nversion: ${PGW_T_VERSION}\n")
	write(".env", "PGW_T_NAME=from-dotenv\nPGW_T_VERSION=1.0.0\n")
	t.Setenv("PGW_T_VERSION", "2.0.0")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "from-dotenv" || c.Version != "2.0.0" {
		t.Errorf("name %q version %q, want from-dotenv (.env) and 2.0.0 (process)", c.Name, c.Version)
	}
	if c.EnvFilePath != filepath.Join(dir, ".env") {
		t.Errorf("EnvFilePath %q: the .env must be watched", c.EnvFilePath)
	}
	if err := os.Remove(filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "PGW_T_NAME") {
		t.Errorf("without the .env: %v, want the unset variable named", err)
	}
}

// response_format and tool_choice take the values of the agent's
// provider's set; the built-in models take either provider's.
func TestProviderParamProblem(t *testing.T) {
	for _, tt := range []struct {
		typ, key string
		v        any
		ok       bool
	}{
		{ProviderOpenAI, "response_format", map[string]any{"type": "json_object"}, true},
		{ProviderOpenAI, "response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "a"}}, true},
		{ProviderOpenAI, "response_format", map[string]any{"type": "json_schema"}, false},
		{ProviderOpenAI, "response_format", map[string]any{"type": "bogus"}, false},
		{ProviderAnthropic, "response_format", "json", false},
		{ProviderOpenAI, "tool_choice", "required", true},
		{ProviderOpenAI, "tool_choice", "any", false},
		{ProviderOpenAI, "tool_choice", "sometimes", false},
		{ProviderOpenAI, "tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "f"}}, true},
		{ProviderOpenAI, "tool_choice", map[string]any{"type": "function"}, false},
		{ProviderOpenAI, "tool_choice", map[string]any{"type": "tool", "name": "f"}, false},
		{ProviderAnthropic, "tool_choice", "any", true},
		{ProviderAnthropic, "tool_choice", "required", true},
		{ProviderAnthropic, "tool_choice", map[string]any{"type": "tool", "name": "f"}, true},
		{ProviderAnthropic, "tool_choice", map[string]any{"type": "tool"}, false},
		{ProviderAnthropic, "tool_choice", 3, false},
		{"", "tool_choice", "any", true},
		{"", "tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "f"}}, true},
		{"", "tool_choice", "sometimes", false},
		{ProviderOpenAI, "temperature", 9, true}, // ParamProblem's
	} {
		got := ProviderParamProblem(tt.typ, tt.key, tt.v)
		if tt.ok != (got == "") {
			t.Errorf("ProviderParamProblem(%q, %s, %v) = %q, want accepted %v", tt.typ, tt.key, tt.v, got, tt.ok)
		}
	}
}
