package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxLatencyWindow bounds health.window: the durations kept per agent.
const maxLatencyWindow = 10000

func (p *parser) validateAgent(c *Config, a *Agent) {
	key := []string{"agents", a.Name}
	if !agentNameRE.MatchString(a.Name) {
		p.addPath(key, "agent names are letters, digits, '_', '-', '.', at most 64, starting with a letter or digit")
	}
	if !knownKinds[a.Kind] {
		p.addPath(append(key, "kind"), fmt.Sprintf("unknown kind %q (want llm, chain, router, parallel, evaluator_optimizer, orchestrator, proxy or toolbox)", a.Kind))
		return
	}
	refAgent := func(field string, names ...string) {
		for i, n := range names {
			k := append(append([]string{}, key...), field)
			if len(names) > 1 || (field != "fan_in" && field != "generator" && field != "evaluator") {
				k = append(k, fmt.Sprint(i))
			}
			switch sub := c.Agents[n]; {
			case sub == nil:
				p.addPath(k, fmt.Sprintf("unknown agent %q", n))
			case n == a.Name:
				p.addPath(k, "an agent cannot use itself")
			case sub.Kind == KindProxy || sub.Kind == KindToolbox:
				p.addPath(k, fmt.Sprintf("agent %q is kind %s, which has no %s to call; use its servers instead", n, sub.Kind, DefaultToolName))
			}
		}
	}
	for i, s := range a.Servers {
		if c.MCP.Servers[s] == nil {
			p.addPath(append(append([]string{}, key...), "servers", fmt.Sprint(i)), fmt.Sprintf("unknown server %q", s))
		}
	}
	refAgent("agents", a.Agents...)
	refAgent("sequence", a.Sequence...)
	refAgent("fan_out", a.FanOut...)
	if a.FanIn != "" {
		refAgent("fan_in", a.FanIn)
	}
	if a.Generator != "" {
		refAgent("generator", a.Generator)
	}
	if a.Evaluator != "" {
		refAgent("evaluator", a.Evaluator)
	}
	p.checkGlobs(append(append([]string{}, key...), "tools", "allow"), a.Tools.Allow)
	p.checkGlobs(append(append([]string{}, key...), "tools", "deny"), a.Tools.Deny)
	for _, k := range sortedKeys(a.Params) {
		if !knownParams[k] {
			p.addPath(append(append([]string{}, key...), "params", k), "unknown parameter")
		} else if msg := ParamProblem(k, a.Params[k]); msg != "" {
			p.addPath(append(append([]string{}, key...), "params", k), msg)
		} else if msg := ProviderParamProblem(c.ProviderType(a.Model), k, a.Params[k]); msg != "" {
			p.addPath(append(append([]string{}, key...), "params", k), msg)
		}
	}
	if gs := a.GatewayStatus; gs != nil {
		if a.Kind != KindToolbox {
			p.addPath(append(append([]string{}, key...), "gateway_status"), "only a toolbox agent has get_gateway_status")
		}
		p.checkGlobs(append(append([]string{}, key...), "gateway_status", "callers"), gs.Callers)
	}
	switch {
	case a.RunAs != "" && a.RunAs != RunAsCaller && a.RunAs != RunAsWorkflow:
		p.addPath(append(key, "run_as"), fmt.Sprintf("unknown value %q (want caller or workflow)", a.RunAs))
	case a.RunAs == RunAsWorkflow && len(Deps(a)) == 0:
		p.addPath(append(key, "run_as"), "this agent runs no other agent")
	}
	if a.MaxIterations < 1 {
		p.addPath(append(key, "max_iterations"), "must be at least 1")
	}
	if a.Health.SlowP95 < 0 {
		p.addPath(append(key, "health", "slow_p95"), "must not be negative")
	}
	if a.Health.Window < 1 || a.Health.Window > maxLatencyWindow {
		p.addPath(append(key, "health", "window"), fmt.Sprintf("must be 1 to %d", maxLatencyWindow))
	}
	if a.ToolName == "get_health" || !toolNameRE(a.ToolName) {
		p.addPath(append(key, "tool_name"), fmt.Sprintf("%q is not a usable tool name", a.ToolName))
	}
	p.validateKind(c, a, key)
	p.validateToolSearch(c, a, key) // toolsearch.go
	p.validateCodeMode(c, a, key)   // codemode.go
	p.checkToolCollisions(a, key)
}

func (p *parser) validateKind(c *Config, a *Agent, key []string) {
	need := func(ok bool, field, msg string) {
		if !ok {
			p.addPath(append(append([]string{}, key...), field), msg)
		}
	}
	switch a.Kind {
	case KindLLM:
		p.checkModel(c, append(append([]string{}, key...), "model"), a.Model)
	case KindChain:
		need(len(a.Sequence) > 0, "sequence", "kind chain needs a non-empty sequence")
	case KindRouter:
		need(len(a.Agents) > 0, "agents", "kind router needs agents to route to")
		p.checkModel(c, append(append([]string{}, key...), "model"), a.Model)
	case KindParallel:
		need(len(a.FanOut) > 0, "fan_out", "kind parallel needs a non-empty fan_out")
		need(a.FanIn != "", "fan_in", "kind parallel needs fan_in")
	case KindProxy, KindToolbox:
		need(len(a.Servers) > 0, "servers", "kind "+a.Kind+" needs servers")
	case KindEvaluatorOptimizer:
		need(a.Generator != "", "generator", "kind evaluator_optimizer needs a generator agent")
		need(a.Evaluator != "", "evaluator", "kind evaluator_optimizer needs an evaluator agent")
		need(RatingRank(a.MinRating) >= 0, "min_rating", fmt.Sprintf("unknown rating %q (want EXCELLENT, GOOD, FAIR or POOR)", a.MinRating))
	case KindOrchestrator:
		need(len(a.Agents) > 0, "agents", "kind orchestrator needs agents to plan over")
		need(a.Plan == PlanFull || a.Plan == PlanIterative, "plan", fmt.Sprintf("unknown plan %q (want full or iterative)", a.Plan))
		p.checkModel(c, append(append([]string{}, key...), "model"), a.Model)
	}
	if a.Kind != KindLLM && (a.Overrides != Overrides{} || a.StreamText) {
		p.addPath(append(append([]string{}, key...), "overrides"), "overrides and stream_text belong to kind llm")
	}
	if a.Kind != KindEvaluatorOptimizer && (a.Generator != "" || a.Evaluator != "") {
		p.addPath(append(append([]string{}, key...), "generator"), "generator and evaluator belong to kind evaluator_optimizer")
	}
}

// checkToolCollisions reports two tools of one agent that would get the same
// name after namespacing and sanitising.
func (p *parser) checkToolCollisions(a *Agent, key []string) {
	seen := map[string]string{a.ToolName: "tool_name", "get_health": "get_health"}
	claim := func(name, what string) {
		if prev, ok := seen[name]; ok {
			p.addPath(key, fmt.Sprintf("tool name %q of %s collides with %s", name, what, prev))
			return
		}
		seen[name] = what
	}
	if offersSearch(a) {
		claim(SearchToolName, "tool search")
	}
	prefixes := map[string]string{}
	for _, s := range a.Servers {
		pre := SanitizeToolName(s)
		if prev, ok := prefixes[pre]; ok && prev != s {
			p.addPath(key, fmt.Sprintf("servers %q and %q have the same tool prefix %q", prev, s, pre))
		}
		prefixes[pre] = s
	}
	if a.Kind == KindLLM {
		for _, sub := range a.Agents {
			claim(SanitizeToolName(sub), "agent "+sub)
			if srv, ok := prefixes[strings.SplitN(SanitizeToolName(sub), "__", 2)[0]]; ok && strings.Contains(sub, "__") {
				p.addPath(key, fmt.Sprintf("agent %q looks like a tool of server %q", sub, srv))
			}
		}
	}
}

func toolNameRE(s string) bool { return s != "" && SanitizeToolName(s) == s }

// SanitizeToolName maps a name onto ^[a-zA-Z0-9_-]{1,64}$: invalid
// characters become '_', longer names are cut and suffixed with a short hash
// of the original so that different long names stay different.
func SanitizeToolName(name string) string {
	b := []byte(name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	if len(b) <= 64 {
		return string(b)
	}
	sum := sha256.Sum256([]byte(name))
	return string(b[:55]) + "_" + hex.EncodeToString(sum[:4])
}

// validateCycles reports agents that reach themselves through agents,
// sequence, fan_out or fan_in.
func (p *parser) validateCycles(c *Config) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(name string, stack []string) bool
	visit = func(name string, stack []string) bool {
		a := c.Agents[name]
		if a == nil {
			return false
		}
		switch color[name] {
		case grey:
			p.addPath([]string{"agents", stack[0]}, "cycle among agents: "+strings.Join(append(stack, name), " -> "))
			return true
		case black:
			return false
		}
		color[name] = grey
		for _, dep := range Deps(a) {
			if dep != name && visit(dep, append(stack, name)) {
				color[name] = black
				return true
			}
		}
		color[name] = black
		return false
	}
	for _, name := range sortedKeys(c.Agents) {
		if color[name] == white {
			visit(name, nil)
		}
	}
}

// Deps lists the agents an agent uses.
func Deps(a *Agent) []string {
	deps := append(append(append([]string{}, a.Agents...), a.Sequence...), a.FanOut...)
	for _, d := range []string{a.FanIn, a.Generator, a.Evaluator} {
		if d != "" {
			deps = append(deps, d)
		}
	}
	return deps
}

// RatingRank is the rank of an evaluator rating in Ratings (POOR 0 …
// EXCELLENT 3), -1 when it is none of them.
func RatingRank(r string) int {
	for i, x := range Ratings {
		if x == r {
			return i
		}
	}
	return -1
}
