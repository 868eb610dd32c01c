package gateway

import (
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// policyStatus is the policy state /-/status and get_gateway_status show:
// the caller rules, the default rule and deny_on_missing_identity. A
// rule's match shows the claims it reads, not the values (a person's
// identity may be among them).
type policyStatus struct {
	Callers               map[string]ruleStatus `json:"callers"`
	Default               *ruleStatus           `json:"default"` // null: every caller may use everything
	DenyOnMissingIdentity bool                  `json:"deny_on_missing_identity"`
	Strict                bool                  `json:"strict"`
}

type ruleStatus struct {
	MatchClaims []string `json:"match_claims,omitempty"`
	Agents      []string `json:"agents"`  // globs; empty: all
	Servers     []string `json:"servers"` // globs; empty: all
	Tools       struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"tools"`
	Limits struct {
		RequestsPerMinute int   `json:"requests_per_minute"` // 0: unlimited
		TokensPerDay      int64 `json:"tokens_per_day"`      // 0: unlimited
	} `json:"limits"`
}

// serverStatus is one downstream server as the status shows it: its
// transport and where it is, without credentials: no headers, no
// userinfo, no query or fragment, and no value taken from the environment
// in the path; for stdio the command's name only (its arguments and
// environment may carry tokens).
type serverStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	URL       string `json:"url,omitempty"`
	Command   string `json:"command,omitempty"`
}

func newPolicyStatus(p config.Policy) policyStatus {
	out := policyStatus{Callers: map[string]ruleStatus{}, DenyOnMissingIdentity: p.DenyOnMissingIdentity, Strict: p.Strict}
	for name, r := range p.Callers {
		out.Callers[name] = newRuleStatus(r)
	}
	if p.Default != nil {
		d := newRuleStatus(p.Default)
		out.Default = &d
	}
	return out
}

func newRuleStatus(r *config.Rule) ruleStatus {
	if r == nil {
		return ruleStatus{Agents: []string{}, Servers: []string{}}
	}
	s := ruleStatus{Agents: orEmpty(r.Agents), Servers: orEmpty(r.Servers)}
	s.Tools.Allow, s.Tools.Deny = orEmpty(r.Tools.Allow), orEmpty(r.Tools.Deny)
	s.Limits.RequestsPerMinute, s.Limits.TokensPerDay = r.Limits.RequestsPerMinute, r.Limits.TokensPerDay
	for claim := range r.Match {
		s.MatchClaims = append(s.MatchClaims, claim)
	}
	sort.Strings(s.MatchClaims)
	return s
}

func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func newServerStatus(cfg *config.Config) []serverStatus {
	out := []serverStatus{}
	for name, s := range cfg.MCP.Servers {
		st := serverStatus{Name: name, Transport: s.Transport}
		if s.Transport == "stdio" {
			st.Command = commandName(s.Command)
		} else {
			st.URL = safeURL(s.URL, s.Expanded())
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// safeURL is raw without userinfo, query and fragment, and with every
// environment value (expanded, as Server.Expanded gives them) in its path
// replaced by "<redacted>"; a URL that does not parse shows as "<invalid>".
func safeURL(raw string, expanded []string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid>"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	path := u.Path
	vals := slices.Clone(expanded)
	sort.SliceStable(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) }) // none left half replaced
	for _, v := range vals {
		path = strings.ReplaceAll(path, v, "<redacted>")
	}
	if path != u.Path {
		u.Path, u.RawPath = path, ""
	}
	return u.String()
}

// commandName is the last element of a stdio server's command.
func commandName(cmd string) string {
	if i := strings.LastIndexAny(cmd, `/\`); i >= 0 {
		return cmd[i+1:]
	}
	return cmd
}
