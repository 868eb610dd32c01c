package config

import (
	"fmt"
	"math"
)

// Defaults of a model's capabilities (models.capabilities entries that
// leave one out), as the Pallas reference gives them.
const (
	DefaultContextWindow   = 131072
	DefaultMaxOutputTokens = 16384
)

// MaxStop is the most stop sequences a call may carry (OpenAI's limit).
const MaxStop = 4

// ParamProblem checks one sampling parameter of params (an agent's, or a
// call's override) and returns what is wrong with it, or "" when it is
// acceptable: temperature 0–2, top_p 0–1, presence_penalty and
// frequency_penalty -2–2, max_tokens and top_k whole numbers of at least 1,
// seed a whole number, stop a string or at most MaxStop strings. Keys it
// does not know (response_format, tool_choice, extra, playback) pass.
func ParamProblem(key string, v any) string {
	switch key {
	case "temperature":
		return numberIn(v, 0, 2)
	case "top_p":
		return numberIn(v, 0, 1)
	case "presence_penalty", "frequency_penalty":
		return numberIn(v, -2, 2)
	case "max_tokens", "top_k":
		return wholeFrom(v, 1)
	case "seed":
		return wholeFrom(v, math.MinInt64)
	case "stop":
		switch s := v.(type) {
		case string:
			return ""
		case []any:
			if len(s) > MaxStop {
				return fmt.Sprintf("at most %d stop sequences (got %d)", MaxStop, len(s))
			}
			for _, x := range s {
				if _, ok := x.(string); !ok {
					return "must be a string or a list of strings"
				}
			}
			return ""
		case []string:
			if len(s) > MaxStop {
				return fmt.Sprintf("at most %d stop sequences (got %d)", MaxStop, len(s))
			}
			return ""
		}
		return "must be a string or a list of strings"
	}
	return ""
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	}
	return 0, false
}

func numberIn(v any, lo, hi float64) string {
	f, ok := number(v)
	if !ok {
		return "must be a number"
	}
	if f < lo || f > hi {
		return fmt.Sprintf("%v is out of range %v to %v", f, lo, hi)
	}
	return ""
}

func wholeFrom(v any, lo float64) string {
	f, ok := number(v)
	if !ok || f != math.Trunc(f) {
		return "must be a whole number"
	}
	if f < lo {
		return fmt.Sprintf("must be at least %v", lo)
	}
	return ""
}

// MaxOutputTokens is the max_output_tokens of model ref (provider.model)
// when models.capabilities has an entry for it, else 0 (unknown: nothing
// is clamped).
func (c *Config) MaxOutputTokens(ref string) int {
	if caps, ok := c.Models.Capabilities[ref]; ok {
		return caps.MaxOutputTokens
	}
	return 0
}

// ProviderParamProblem checks the parameters whose values are the
// provider's own vocabulary, response_format and tool_choice, against the
// set the provider type (ProviderOpenAI, ProviderAnthropic; "" for the
// built-in models, which take either) accepts, and returns what is wrong,
// or "". Other keys pass (ParamProblem checks them).
func ProviderParamProblem(providerType, key string, v any) string {
	switch key {
	case "response_format":
		// Anthropic has no response_format (the parameter is dropped for
		// it), so its shape is checked as OpenAI's for every provider.
		return responseFormatProblem(v)
	case "tool_choice":
		switch providerType {
		case ProviderOpenAI:
			return openAIToolChoiceProblem(v)
		case ProviderAnthropic:
			return anthropicToolChoiceProblem(v)
		}
		if openAIToolChoiceProblem(v) == "" || anthropicToolChoiceProblem(v) == "" {
			return ""
		}
		return `must be "auto", "none", "required" or "any", or a tool choice object`
	}
	return ""
}

// responseFormatProblem: an object {"type": "text" | "json_object" |
// "json_schema"}, json_schema with a json_schema object that has a name.
func responseFormatProblem(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return `must be an object {"type": "text" | "json_object" | "json_schema"}`
	}
	switch m["type"] {
	case "text", "json_object":
		return ""
	case "json_schema":
		js, ok := m["json_schema"].(map[string]any)
		if name, _ := js["name"].(string); !ok || name == "" {
			return `type json_schema needs "json_schema": {"name": ..., "schema": {...}}`
		}
		return ""
	}
	return fmt.Sprintf(`type %s is not one of text, json_object, json_schema`, quoted(m["type"]))
}

// openAIToolChoiceProblem: "none" | "auto" | "required", or {"type":
// "function", "function": {"name": ...}} (also "allowed_tools" and
// "custom", which OpenAI added).
func openAIToolChoiceProblem(v any) string {
	switch c := v.(type) {
	case string:
		switch c {
		case "none", "auto", "required":
			return ""
		}
		return fmt.Sprintf(`%q is not one of "none", "auto", "required" (OpenAI-compatible providers)`, c)
	case map[string]any:
		switch c["type"] {
		case "function":
			fn, _ := c["function"].(map[string]any)
			if name, _ := fn["name"].(string); name == "" {
				return `type function needs "function": {"name": ...}`
			}
			return ""
		case "allowed_tools", "custom":
			return ""
		}
		return fmt.Sprintf("type %s is not one of function, allowed_tools, custom (OpenAI-compatible providers)", quoted(c["type"]))
	}
	return `must be "none", "auto", "required" or an object {"type": "function", "function": {"name": ...}}`
}

// anthropicToolChoiceProblem: the OpenAI-style strings pallasgw maps
// ("auto", "none", "required", and Anthropic's "any"), or {"type": "auto"
// | "any" | "none" | "tool"}, tool with a name.
func anthropicToolChoiceProblem(v any) string {
	switch c := v.(type) {
	case string:
		switch c {
		case "auto", "none", "required", "any":
			return ""
		}
		return fmt.Sprintf(`%q is not one of "auto", "any", "required", "none" (Anthropic)`, c)
	case map[string]any:
		switch c["type"] {
		case "auto", "any", "none":
			return ""
		case "tool":
			if name, _ := c["name"].(string); name == "" {
				return `type tool needs a "name"`
			}
			return ""
		}
		return fmt.Sprintf("type %s is not one of auto, any, none, tool (Anthropic)", quoted(c["type"]))
	}
	return `must be "auto", "any", "none" or an object {"type": "tool", "name": ...}`
}

func quoted(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

// ProviderType is the provider type of model ref (provider.model): "" for
// the built-in models and unknown providers.
func (c *Config) ProviderType(ref string) string {
	prov, _ := SplitModel(ref)
	if p := c.Models.Providers[prov]; p != nil {
		return p.Type
	}
	return ""
}
