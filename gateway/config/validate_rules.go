package config

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// checkDeadRules finds the rules that select nothing, which are typos
// more often than not: a policy.callers rule no caller can have (a rule
// named after no token falls to nobody, and its caller to policy.default),
// and agents or servers globs of tokens and caller rules that match no
// agent or server. Each is a warning, or with policy.strict an error.
//
// In auth mode passthrough there are no tokens: a toolbox caller names
// itself with the agent_id argument, so a rule named after no token is
// keyed by an agent_id. Such rules are listed as information (Infos), never
// a warning nor, with policy.strict, an error; only without a toolbox
// agent, where no caller can send an agent_id, is one a dead rule.
func (p *parser) checkDeadRules(c *Config) {
	finding := func(key []string, msg string) {
		if c.Policy.Strict {
			p.addPath(key, msg)
			return
		}
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: %s: %s", p.file, lineOf(p.root, key), keyName(key), msg))
	}
	globs := func(key []string, patterns []string, what string, names map[string]bool) {
		for i, g := range patterns {
			if g != "*" && !matchesAny(g, names) { // ("*", a token's default, says all, whatever there is)
				finding(append(append([]string{}, key...), strconv.Itoa(i)), fmt.Sprintf("%q matches no %s", g, what))
			}
		}
	}
	agents, servers, tokens := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name := range c.Agents {
		agents[name] = true
	}
	for name := range c.MCP.Servers {
		servers[name] = true
	}
	for i, t := range c.Auth.Tokens {
		tokens[t.Name] = true
		globs([]string{"auth", "tokens", strconv.Itoa(i), "agents"}, t.Agents, "agent", agents)
	}
	rule := func(key []string, r *Rule) {
		globs(append(append([]string{}, key...), "agents"), r.Agents, "agent", agents)
		globs(append(append([]string{}, key...), "servers"), r.Servers, "server", servers)
	}
	names := make([]string, 0, len(c.Policy.Callers))
	for name := range c.Policy.Callers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r, key := c.Policy.Callers[name], []string{"policy", "callers", name}
		if r == nil {
			continue
		}
		switch {
		case r.Match != nil && c.Auth.Mode != "jwt":
			finding(append(key, "match"), "rules with match apply only in auth mode jwt, so this rule applies to no caller")
		case r.Match == nil && !tokens[name] && c.Auth.Mode == "passthrough":
			p.agentIDRule(c, key, name, finding)
		case r.Match == nil && !tokens[name]:
			finding(key, fmt.Sprintf("no auth.tokens entry is named %q, so this rule applies to no caller (a caller without a rule gets policy.default)", name))
		}
		rule(key, r)
	}
	if c.Policy.Default != nil {
		rule([]string{"policy", "default"}, c.Policy.Default)
	}
}

// agentIDRule reports a passthrough-mode rule named after no token: the
// rule of the toolbox callers that send this agent_id (information), or,
// without a toolbox agent, a rule no caller can have (finding).
func (p *parser) agentIDRule(c *Config, key []string, name string, finding func([]string, string)) {
	var toolboxes []string
	for _, a := range sortedKeys(c.Agents) {
		if c.Agents[a] != nil && c.Agents[a].Kind == KindToolbox {
			toolboxes = append(toolboxes, a)
		}
	}
	if len(toolboxes) == 0 {
		finding(key, "in auth mode passthrough a rule is named by the agent_id a toolbox caller sends, and no agent is a toolbox, so this rule applies to no caller")
		return
	}
	c.Infos = append(c.Infos, fmt.Sprintf("%s:%d: %s: applies to the toolbox callers that send agent_id %q (%s; auth mode passthrough)",
		p.file, lineOf(p.root, key), keyName(key), name, strings.Join(toolboxes, ", ")))
}

// matchesAny reports whether the glob g (path.Match syntax, checked
// elsewhere) matches one of names.
func matchesAny(g string, names map[string]bool) bool {
	for n := range names {
		if ok, _ := path.Match(g, n); ok {
			return true
		}
	}
	return false
}
