package config

import (
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
)

// fast-agent's AgentCard names (its plan/agent-card-rfc.md: a card's type
// and the attributes of the decorator of that type) are accepted in agent
// cards where they mean what a pallasgw key means, and rewritten to it
// before the card is checked:
//
//	type                  -> kind (agent -> llm, iterative_planner -> orchestrator with plan iterative)
//	request_params        -> params (maxTokens -> max_tokens, stopSequences -> stop, ...;
//	                         max_iterations -> the agent's max_iterations)
//	plan_type             -> plan
//	plan_iterations       -> max_iterations
//	tools {server: [...]} -> tools {allow: ["server__..."]} (a server not listed keeps all its tools)
//
// schema_version, default and use_history are accepted and change nothing
// (pallasgw agents are stateless: history is what the caller sends). The
// fast-agent names with no pallasgw meaning are errors that say so.

// fastAgentKinds maps fast-agent card types onto kinds.
var fastAgentKinds = map[string]string{
	"agent": KindLLM, "chain": KindChain, "parallel": KindParallel, "router": KindRouter,
	"evaluator_optimizer": KindEvaluatorOptimizer, "orchestrator": KindOrchestrator, "iterative_planner": KindOrchestrator,
}

// fastAgentParams maps fast-agent RequestParams names onto params keys.
var fastAgentParams = map[string]string{
	"maxTokens": "max_tokens", "max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "topP": "top_p",
	"top_k": "top_k", "topK": "top_k", "stopSequences": "stop", "stop": "stop", "seed": "seed",
	"presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
	"response_format": "response_format", "tool_choice": "tool_choice",
}

// fastAgentNoop are fast-agent card names accepted without effect.
var fastAgentNoop = map[string]string{
	"schema_version": "", "default": "", "use_history": "",
}

// fastAgentUnsupported are fast-agent card names pallasgw cannot honour.
var fastAgentUnsupported = map[string]string{
	"human_input": "pallasgw agents do not ask a human", "api_key": "keys belong to models.providers",
	"skills": "no skills", "resources": "no MCP resources for the model", "prompts": "no MCP prompts for the model",
	"shell": "no shell", "cwd": "no shell", "messages": "history is what the caller sends",
	"function_tools": "no function tools", "tool_hooks": "no tool hooks", "history_mode": "agents are stateless",
	"max_parallel": "tool calls run in parallel, unbounded", "child_timeout_sec": "use timeout",
	"max_display_instances": "no display", "cumulative": "no cumulative chains", "include_request": "fan_in gets the request",
	"refinement_instruction": "the refinement request is built in", "worker": "no MAKER kind", "k": "no MAKER kind",
	"max_samples": "no MAKER kind", "match_strategy": "no MAKER kind", "red_flag_max_length": "no MAKER kind",
	"tool_only": "every agent is served", "mcp_connect": "servers come from mcp.servers",
}

// fastAgentCard rewrites the fast-agent names of a card's front matter
// (root, a mapping) into pallasgw keys, in place; problems are reported
// with the card's lines.
func (p *parser) fastAgentCard(root *yaml.Node, agent string) {
	at := "agents." + agent + "."
	var servers []string
	if v := mapValue(root, "servers"); v != nil {
		_ = v.Decode(&servers)
	}
	for i := 0; i+1 < len(root.Content); {
		k, v := root.Content[i], root.Content[i+1]
		drop := false
		switch name := k.Value; {
		case name == "type":
			if mapValue(root, "kind") != nil {
				p.add(k.Line, at+"type", "set either type (fast-agent) or kind, not both")
				drop = true
				break
			}
			kind, ok := fastAgentKinds[v.Value]
			if !ok {
				p.add(v.Line, at+"type", fmt.Sprintf("fast-agent card type %q has no pallasgw kind", v.Value))
				p.errs.markTyped(at + "kind") // the kind is unknown: no check of it
				drop = true
				break
			}
			if v.Value == "iterative_planner" && mapValue(root, "plan") == nil && mapValue(root, "plan_type") == nil {
				root.Content = append(root.Content, scalar("plan", k.Line), scalar(PlanIterative, v.Line))
			}
			k.Value, v.Value, v.Tag = "kind", kind, "!!str"
		case name == "plan_type":
			k.Value = "plan"
		case name == "plan_iterations":
			k.Value = "max_iterations"
		case name == "request_params":
			drop = p.fastAgentParams(root, k, v, at)
		case name == "tools" && v.Kind == yaml.MappingNode && mapValue(v, "allow") == nil && mapValue(v, "deny") == nil:
			p.fastAgentTools(v, servers, at)
		default:
			if _, ok := fastAgentNoop[name]; ok {
				drop = true
			} else if why, ok := fastAgentUnsupported[name]; ok {
				p.add(k.Line, at+name, "fast-agent key with no pallasgw equivalent ("+why+")")
				drop = true
			}
		}
		if drop {
			root.Content = append(root.Content[:i:i], root.Content[i+2:]...)
			continue
		}
		i += 2
	}
}

// fastAgentParams moves request_params into params (created, or merged
// into one the card also has); it reports whether request_params goes.
func (p *parser) fastAgentParams(root, k, v *yaml.Node, at string) bool {
	if v.Kind != yaml.MappingNode {
		p.add(v.Line, at+"request_params", "must be a mapping")
		return true
	}
	params := mapValue(root, "params")
	if params == nil {
		params = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: k.Line}
		root.Content = append(root.Content, scalar("params", k.Line), params)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		pk, pv := v.Content[i], v.Content[i+1]
		switch to, ok := fastAgentParams[pk.Value]; {
		case ok:
			params.Content = append(params.Content, scalar(to, pk.Line), pv)
		case pk.Value == "max_iterations":
			if mapValue(root, "max_iterations") == nil {
				root.Content = append(root.Content, scalar("max_iterations", pk.Line), pv)
			}
		case pk.Value == "use_history" || pk.Value == "parallel_tool_calls" || pk.Value == "systemPrompt":
			// history is the caller's; tool calls always run in parallel;
			// the instruction is the body
		default:
			p.add(pk.Line, at+"request_params."+pk.Value, "unknown request parameter")
		}
	}
	return true
}

// fastAgentTools turns fast-agent's {server: [tool or pattern]} filter into
// allow globs on <server>__<tool>; a server of the agent not listed keeps
// every tool, as in fast-agent.
func (p *parser) fastAgentTools(v *yaml.Node, servers []string, at string) {
	listed := map[string]bool{}
	var allow []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		srv, list := v.Content[i].Value, v.Content[i+1]
		var names []string
		if err := list.Decode(&names); err != nil {
			p.add(list.Line, at+"tools."+srv, "must be a list of tool names or patterns")
			continue
		}
		listed[srv] = true
		for _, n := range names {
			allow = append(allow, srv+"__"+n)
		}
	}
	for _, s := range servers {
		if !listed[s] {
			allow = append(allow, s+"__*")
		}
	}
	sort.Strings(allow)
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: v.Line}
	for _, a := range allow {
		seq.Content = append(seq.Content, scalar(a, v.Line))
	}
	v.Content = []*yaml.Node{scalar("allow", v.Line), seq}
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(v string, line int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Line: line}
}
