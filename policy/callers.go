package policy

import (
	"errors"
	"fmt"
	"sort"

	"github.com/pallasgw/pallasgw/policy/quota"
)

// Reasons of a Decision; the reason label of pallasgw_policy_decisions_total.
const (
	ReasonAllowed          = "allowed"
	ReasonAgentNotAllowed  = "agent_not_allowed"
	ReasonServerNotAllowed = "server_not_allowed"
	ReasonToolDenied       = "tool_denied"
	ReasonToolNotAllowed   = "tool_not_allowed"
	ReasonMissingIdentity  = "missing_identity"
)

// Decision is the outcome of one policy check. Reason is one of the Reason*
// constants, never request data.
type Decision struct {
	Allowed bool
	Reason  string
	// Rule is the config path of the rule that decided
	// ("policy.callers.bob.tools.deny", "agents.research.tools.allow",
	// "policy.default"), "" when nothing restricted the use. A config
	// name, never request data.
	Rule string
}

func decision(reason, rule string) Decision {
	return Decision{Allowed: reason == ReasonAllowed, Reason: reason, Rule: rule}
}

// Rule narrows what one caller may use (policy.callers.<name> or
// policy.default), as raw globs. An empty (or nil) Agents or Servers means
// "all": a rule restricts only the dimensions it lists. ToolsAllow and
// ToolsDeny form a ToolFilter over "<server>__<tool>" names (deny wins;
// empty allow means all). An empty list cannot mean "nothing"; to shut a
// caller out of every agent, list a name no agent has.
type Rule struct {
	Agents, Servers       []string
	ToolsAllow, ToolsDeny []string
	// Match, when set, makes the rule one for JWT callers whose claims
	// match (MatchRule): claim -> value or []any of values. Order is the
	// rule's rank among matching rules (its place in the file).
	Match map[string]any
	Order int
	// Limits bound the caller's request rate and LLM tokens (0 = none).
	Limits quota.Limits
}

type compiledRule struct {
	name            string // policy.callers.<name> or policy.default
	agents, servers Globs  // empty = all
	tools           ToolFilter
	limits          quota.Limits
}

func compileRule(name string, r Rule) (compiledRule, []error) {
	c := compiledRule{name: name, limits: r.Limits}
	var errs []error
	var err error
	if c.agents, err = CompileGlobs(r.Agents); err != nil {
		errs = append(errs, prefixErrs("agents: ", err)...)
	}
	if c.servers, err = CompileGlobs(r.Servers); err != nil {
		errs = append(errs, prefixErrs("servers: ", err)...)
	}
	if c.tools, err = NewToolFilter(r.ToolsAllow, r.ToolsDeny); err != nil {
		errs = append(errs, prefixErrs("tools.", err)...)
	}
	c.tools.Name = name + ".tools"
	return c, errs
}

// CallerPolicy answers what a caller identity may use ("Callers").
// A listed caller is judged by its own rule only; every other identity,
// including the empty one, by the default rule. It is immutable and safe
// for concurrent use.
type CallerPolicy struct {
	callers       map[string]compiledRule
	names         map[string]struct{} // caller names the config knows (Label)
	matchers      []matcher           // rules with a match, in file order
	def           compiledRule
	denyOnMissing bool
}

// matcher is one rule that JWT callers are assigned by their claims.
type matcher struct {
	name   string
	claims map[string][]string // claim -> accepted values, as text
	order  int
}

// NewCallerPolicy compiles the rules. def nil means the default rule allows
// everything. denyOnMissingIdentity is policy.deny_on_missing_identity, see
// MissingIdentity. The error lists every bad glob, prefixed with
// "callers.<name>." or "default.", and empty caller names.
func NewCallerPolicy(callers map[string]Rule, def *Rule, denyOnMissingIdentity bool) (*CallerPolicy, error) {
	p := &CallerPolicy{callers: make(map[string]compiledRule, len(callers)), names: map[string]struct{}{},
		denyOnMissing: denyOnMissingIdentity, def: compiledRule{name: "policy.default"}}
	p.def.tools.Name = "policy.default.tools"
	var errs []error
	names := make([]string, 0, len(callers))
	for name := range callers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "" {
			errs = append(errs, errors.New("callers: empty caller name"))
			continue
		}
		c, cerrs := compileRule("policy.callers."+name, callers[name])
		errs = append(errs, prefixAll("callers."+name+".", cerrs)...)
		p.callers[name] = c
		p.names[name] = struct{}{}
		if m := callers[name].Match; len(m) > 0 {
			p.matchers = append(p.matchers, matcher{name: name, claims: matchValues(m), order: callers[name].Order})
		}
	}
	sort.SliceStable(p.matchers, func(i, j int) bool { return p.matchers[i].order < p.matchers[j].order })
	if def != nil {
		c, cerrs := compileRule("policy.default", *def)
		errs = append(errs, prefixAll("default.", cerrs)...)
		p.def = c
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// prefixErrs flattens err (possibly an errors.Join) and prefixes each
// problem, so that every line of the joined result names its full path.
func prefixErrs(prefix string, err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, inner := range j.Unwrap() {
			out = append(out, prefixErrs(prefix, inner)...)
		}
		return out
	}
	return []error{fmt.Errorf("%s%w", prefix, err)}
}

func prefixAll(prefix string, errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		out = append(out, prefixErrs(prefix, e)...)
	}
	return out
}

// NameCallers adds names (auth.tokens names) to the callers Label keeps.
// It is called while the policy is built, before it is shared.
func (p *CallerPolicy) NameCallers(names ...string) {
	for _, n := range names {
		if n != "" {
			p.names[n] = struct{}{}
		}
	}
}

// OtherCaller is the caller label of every caller the config does not name.
const OtherCaller = "other"

// Label is the caller label of metrics for a caller's policy key: the key
// when the config names it (a policy.callers rule, an auth.tokens name),
// else OtherCaller, so that the label set stays bounded whatever callers
// send (a toolbox agent_id, a JWT subject).
func (p *CallerPolicy) Label(caller string) string {
	if p != nil {
		if _, ok := p.names[caller]; ok {
			return caller
		}
	}
	return OtherCaller
}

func (p *CallerPolicy) rule(caller string) compiledRule {
	if r, ok := p.callers[caller]; ok {
		return r
	}
	return p.def
}

// AllowAgent decides whether caller may use agent.
func (p *CallerPolicy) AllowAgent(caller, agent string) Decision {
	r := p.rule(caller)
	if r.agents.Empty() {
		return decision(ReasonAllowed, "")
	}
	if !r.agents.Match(agent) {
		return decision(ReasonAgentNotAllowed, r.name+".agents")
	}
	return decision(ReasonAllowed, r.name+".agents")
}

// AllowServer decides whether caller may use downstream server.
func (p *CallerPolicy) AllowServer(caller, server string) Decision {
	r := p.rule(caller)
	if r.servers.Empty() {
		return decision(ReasonAllowed, "")
	}
	if !r.servers.Match(server) {
		return decision(ReasonServerNotAllowed, r.name+".servers")
	}
	return decision(ReasonAllowed, r.name+".servers")
}

// AllowTool decides whether caller may call tool on server. The server must
// be allowed first; the tool globs are then matched against the namespaced
// name "<server>__<tool>" only (the same names agents' tools filters use),
// so a rule for all tools of one server reads "argos__*".
func (p *CallerPolicy) AllowTool(caller, server, tool string) Decision {
	d := p.AllowServer(caller, server)
	if !d.Allowed {
		return d
	}
	if td := p.rule(caller).tools.Decide(server + "__" + tool); td.Rule != "" {
		return td
	}
	return d
}

// MissingIdentity decides whether a toolbox call by caller may go on at
// all: with deny_on_missing_identity, an empty caller is refused with
// ReasonMissingIdentity; otherwise, and for any named caller, it is allowed
// (and the unnamed caller is then judged by the default rule).
func (p *CallerPolicy) MissingIdentity(caller string) Decision {
	if caller == "" && p.denyOnMissing {
		return decision(ReasonMissingIdentity, "policy.deny_on_missing_identity")
	}
	return decision(ReasonAllowed, "")
}

// DecideTool is the decision for one downstream tool an agent is asked to
// call or show: the agent's tools filter (deny wins; an empty allow list
// allows all, matched on "<server>__<tool>"), then the caller's rule.
func (p *CallerPolicy) DecideTool(agent ToolFilter, caller, server, tool string) Decision {
	ad := agent.Decide(server + "__" + tool)
	if !ad.Allowed {
		return ad
	}
	if d := p.AllowTool(caller, server, tool); !d.Allowed || d.Rule != "" {
		return d
	}
	return ad
}

// Limits are the quota limits of the caller with policy key caller.
func (p *CallerPolicy) Limits(caller string) quota.Limits { return p.rule(caller).limits }

// matchValues turns a rule's match into accepted texts per claim.
func matchValues(m map[string]any) map[string][]string {
	out := make(map[string][]string, len(m))
	for claim, v := range m {
		if list, ok := v.([]any); ok {
			for _, e := range list {
				out[claim] = append(out[claim], fmt.Sprint(e))
			}
			continue
		}
		out[claim] = []string{fmt.Sprint(v)}
	}
	return out
}

// MatchRule returns the name of the first rule (in file order) whose match
// the claims meet, or "". Every claim of a match must be present with an
// accepted value; a claim that is a list (groups, roles) meets it when any
// element does.
func (p *CallerPolicy) MatchRule(claims Claims) string {
	for _, m := range p.matchers {
		if claimsMeet(claims, m.claims) {
			return m.name
		}
	}
	return ""
}

func claimsMeet(claims Claims, want map[string][]string) bool {
	for claim, accepted := range want {
		v, ok := claims[claim]
		if !ok {
			return false
		}
		var have []string
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				have = append(have, claimText(e))
			}
		default:
			have = []string{claimText(v)}
		}
		if !anyIn(have, accepted) {
			return false
		}
	}
	return true
}

// claimText is a claim value as a match compares it: JSON numbers that are
// whole print without a fraction.
func claimText(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(v)
}

func anyIn(have, accepted []string) bool {
	for _, h := range have {
		for _, a := range accepted {
			if h == a {
				return true
			}
		}
	}
	return false
}
