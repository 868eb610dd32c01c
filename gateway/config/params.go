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
