package agents

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// callOverrides are the per-call changes a caller may make to an llm
// agent's run when the agent's overrides allow them. They
// belong to one call: sub-agents never see them.
type callOverrides struct {
	params map[string]any // merged over the agent's params, key by key
	system *string        // system_override: replaces the instruction
	append string         // system_append: added after the instruction
	tools  *policy.Globs  // narrows the agent's tools (nil: not narrowed)
}

// overrideParams are the params keys a call may set (not playback, which
// belongs to the config).
var overrideParams = map[string]bool{"temperature": true, "top_p": true, "top_k": true, "max_tokens": true, "stop": true,
	"presence_penalty": true, "frequency_penalty": true, "seed": true, "response_format": true, "tool_choice": true, "extra": true}

// parseOverrides reads the override arguments of send_message. An
// argument the agent's overrides do not allow is refused, naming the
// setting that would allow it. response_format and tool_choice are
// checked against the set of providerType (the agent's model's provider).
func parseOverrides(args map[string]any, allow config.Overrides, providerType string) (*callOverrides, error) {
	var o callOverrides
	used := false
	refuse := func(arg, setting string) error {
		return &ArgumentError{fmt.Sprintf("%s is not accepted by this agent (its config does not set overrides.%s)", arg, setting)}
	}
	if v, ok := args["params"]; ok && v != nil {
		if !allow.Params {
			return nil, refuse("params", "params")
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, &ArgumentError{"params must be an object"}
		}
		for _, k := range sortedNames(m) {
			if !overrideParams[k] {
				return nil, &ArgumentError{fmt.Sprintf("params: unknown parameter %q", k)}
			}
			if m[k] == nil {
				continue // null clears
			}
			msg := config.ParamProblem(k, m[k])
			if msg == "" {
				msg = config.ProviderParamProblem(providerType, k, m[k])
			}
			if msg != "" {
				return nil, &ArgumentError{fmt.Sprintf("params: %s %s", k, msg)}
			}
		}
		o.params, used = m, true
	}
	for _, arg := range []string{"system_override", "system_append"} {
		v, ok := args[arg]
		if !ok || v == nil {
			continue
		}
		if !allow.System {
			return nil, refuse(arg, "system")
		}
		s, ok := v.(string)
		if !ok {
			return nil, &ArgumentError{arg + " must be a string"}
		}
		if arg == "system_override" {
			o.system = &s
		} else {
			o.append = s
		}
		used = true
	}
	if v, ok := args["tools"]; ok && v != nil {
		if !allow.Tools {
			return nil, refuse("tools", "tools")
		}
		list, err := stringList(v, "tools")
		if err != nil {
			return nil, &ArgumentError{err.Error()}
		}
		g, err := policy.CompileGlobs(list)
		if err != nil {
			return nil, &ArgumentError{"tools: " + err.Error()}
		}
		o.tools, used = &g, true
	}
	if !used {
		return nil, nil
	}
	return &o, nil
}

// systemPrompt applies system_override and system_append to instruction.
func (o *callOverrides) systemPrompt(instruction string) string {
	if o == nil {
		return instruction
	}
	if o.system != nil {
		instruction = *o.system
	}
	if o.append != "" {
		instruction = strings.TrimSpace(instruction + "\n\n" + o.append)
	}
	return instruction
}

// ToolsNarrowed reports whether the call narrows the agent's tools
// (overrides.tools), and ToolOffered whether it keeps the tool of
// fullName (<server>__<tool>, or a sub-agent's name).
func (c *Call) ToolsNarrowed() bool { return c.overrides != nil && c.overrides.tools != nil }

func (c *Call) ToolOffered(fullName string) bool {
	return !c.ToolsNarrowed() || c.overrides.tools.Match(fullName)
}

// SystemPrompt is instruction with the call's system_override and
// system_append applied.
func (c *Call) SystemPrompt(instruction string) string { return c.overrides.systemPrompt(instruction) }

// model is m with the call's params merged over the agent's.
func (o *callOverrides) model(m *modelRef, agentParams map[string]any) (*modelRef, error) {
	if o == nil || o.params == nil {
		return m, nil
	}
	merged := make(map[string]any, len(agentParams)+len(o.params))
	for k, v := range agentParams {
		merged[k] = v
	}
	for k, v := range o.params {
		if v == nil {
			delete(merged, k) // null clears the agent's value: the provider's default
			continue
		}
		merged[k] = v
	}
	p, err := parseParams(merged)
	if err != nil {
		return nil, &ArgumentError{"params: " + err.Error()}
	}
	cp := *m
	cp.params = m.clamp(p)
	return &cp, nil
}

// sendMessageSchemaFor is send_message's input schema with the override
// arguments the agent allows.
func sendMessageSchemaFor(allow config.Overrides) json.RawMessage {
	if !allow.Params && !allow.System && !allow.Tools {
		return json.RawMessage(sendMessageSchema)
	}
	var s map[string]any
	_ = json.Unmarshal([]byte(sendMessageSchema), &s) // a constant
	props := s["properties"].(map[string]any)
	if allow.Params {
		props["params"] = map[string]any{"type": "object", "description": "Sampling parameters for this call, over the agent's: temperature, top_p, top_k, max_tokens, stop, presence_penalty, frequency_penalty, seed, response_format, tool_choice, extra."}
	}
	if allow.System {
		props["system_override"] = map[string]any{"type": "string", "description": "Replaces the agent's instruction for this call."}
		props["system_append"] = map[string]any{"type": "string", "description": "Added after the agent's instruction for this call."}
	}
	if allow.Tools {
		props["tools"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"},
			"description": "Globs on <server>__<tool> (or a sub-agent's name): this call uses only the agent's tools that match."}
	}
	raw, _ := json.Marshal(s)
	return raw
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
