package toolsearch

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// The search_tools tool as every kind offers it.
const (
	ToolName        = "search_tools"
	ToolDescription = "Finds the tools that fit a task among all the tools you may use: give what you want to do in a few words; returns the best matches, best first, each with its server, name, description and input schema, within a token budget."
	ToolSchema      = `{"type":"object","properties":{
  "query":{"type":"string","description":"What you want to do, in a few words, e.g. \"restart a deployment\" or \"post to a chat channel\"."},
  "limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools at most; default 10."},
  "servers":{"type":"array","items":{"type":"string"},"description":"Only tools of these servers."},
  "max_schema_tokens":{"type":"integer","minimum":1,"description":"Budget for the returned definitions, estimated as JSON length / 4; default 4000. Past it the list is cut and truncated is true."}},
  "required":["query"],"additionalProperties":false}`
)

// ArgumentError is a search_tools argument that cannot be used.
type ArgumentError struct{ Msg string }

func (e *ArgumentError) Error() string { return e.Msg }

func argErr(format string, args ...any) error {
	return &ArgumentError{Msg: fmt.Sprintf(format, args...)}
}

// ParseArgs reads search_tools arguments. known reports whether a server
// name is one of the agent's (servers naming another are refused).
func ParseArgs(args map[string]any, known func(server string) bool) (Query, error) {
	var q Query
	text, ok := args["query"].(string)
	switch {
	case !ok || text == "":
		return q, argErr("query is required and must be a non-empty string")
	case len(text) > MaxQueryBytes:
		return q, argErr("query is longer than %d bytes", MaxQueryBytes)
	case !utf8.ValidString(text):
		return q, argErr("query is not valid UTF-8")
	}
	q.Text = text
	var err error
	if q.Limit, err = intArg(args, "limit"); err != nil {
		return q, err
	}
	if q.Limit > MaxLimit {
		return q, argErr("limit must be at most %d", MaxLimit)
	}
	if q.MaxSchemaTokens, err = intArg(args, "max_schema_tokens"); err != nil {
		return q, err
	}
	if raw, ok := args["servers"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return q, argErr("servers must be an array of strings")
		}
		q.Servers = make([]string, 0, len(list))
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return q, argErr("servers must be an array of strings")
			}
			if !known(s) {
				return q, argErr("no server %q is available here", s)
			}
			q.Servers = append(q.Servers, s)
		}
	}
	return q, nil
}

// intArg reads an optional whole number ≥ 1 (0 when absent).
func intArg(args map[string]any, name string) (int, error) {
	raw, ok := args[name]
	if !ok || raw == nil {
		return 0, nil
	}
	f, ok := raw.(float64)
	if !ok || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, argErr("%s must be a positive integer", name)
	}
	return int(f), nil
}

// JSON is the result as its text content gives it.
func (r Result) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}
