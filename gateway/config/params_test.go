package config

import "testing"

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
