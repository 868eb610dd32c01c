package policy

import (
	"errors"
	"fmt"
	"path"
)

// Globs is a compiled list of patterns with path.Match semantics: "*" any
// run of characters except '/', "?" one such character, "[...]" a class.
// A pattern matches a whole name, never a part of it. A name matches the
// list when it matches any pattern; an empty list matches nothing (callers
// that mean "no restriction" by an empty list, like ToolFilter and Rule,
// check Empty first). The zero value is the empty list. Globs is immutable.
type Globs struct {
	patterns []string
}

// CompileGlobs checks every pattern and returns them as Globs. The error
// names each bad pattern; an empty pattern is an error (it could only match
// the empty name, which is never what a config means).
func CompileGlobs(patterns []string) (Globs, error) {
	var errs []error
	for _, p := range patterns {
		if p == "" {
			errs = append(errs, errors.New(`invalid glob "": empty pattern`))
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("invalid glob %q: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return Globs{}, errors.Join(errs...)
	}
	return Globs{patterns: append([]string(nil), patterns...)}, nil
}

// Match reports whether name matches at least one pattern.
func (g Globs) Match(name string) bool {
	for _, p := range g.patterns {
		if ok, _ := path.Match(p, name); ok { // patterns were checked by CompileGlobs
			return true
		}
	}
	return false
}

// Empty reports whether the list has no pattern.
func (g Globs) Empty() bool { return len(g.patterns) == 0 }

// Patterns returns a copy of the source patterns (for status pages).
func (g Globs) Patterns() []string { return append([]string(nil), g.patterns...) }

// ToolFilter is an allow/deny pair of globs over tool names (for agents:
// "<server>__<tool>"). An empty Allow allows every name; Deny always wins.
// The zero value allows everything.
type ToolFilter struct {
	Allow, Deny Globs
	// Name is where the filter is configured ("agents.research.tools",
	// "policy.callers.bob.tools"); decisions name its allow or deny list
	// as the rule that matched. Default "tools".
	Name string
}

// NewToolFilter compiles allow and deny; errors are prefixed "allow: " or
// "deny: " so the caller can add its own path ("agents.research.tools.").
// A nil and an empty allow list both mean "allow all".
func NewToolFilter(allow, deny []string) (ToolFilter, error) {
	a, errA := CompileGlobs(allow)
	d, errD := CompileGlobs(deny)
	var errs []error
	if errA != nil {
		errs = append(errs, prefixErrs("allow: ", errA)...)
	}
	if errD != nil {
		errs = append(errs, prefixErrs("deny: ", errD)...)
	}
	if len(errs) > 0 {
		return ToolFilter{}, errors.Join(errs...)
	}
	return ToolFilter{Allow: a, Deny: d}, nil
}

// Allowed reports whether name passes the filter.
func (f ToolFilter) Allowed(name string) bool {
	return f.Decide(name).Allowed
}

// Decide returns the filter's decision on name: ReasonToolDenied (a deny
// glob matched; Rule "<Name>.deny"), ReasonToolNotAllowed (allow globs are
// set and none matched; "<Name>.allow") or ReasonAllowed (Rule
// "<Name>.allow" when an allow glob matched, "" when nothing restricts).
func (f ToolFilter) Decide(name string) Decision {
	base := f.Name
	if base == "" {
		base = "tools"
	}
	switch {
	case f.Deny.Match(name):
		return Decision{Reason: ReasonToolDenied, Rule: base + ".deny"}
	case f.Allow.Empty():
		return Decision{Allowed: true, Reason: ReasonAllowed}
	case !f.Allow.Match(name):
		return Decision{Reason: ReasonToolNotAllowed, Rule: base + ".allow"}
	}
	return Decision{Allowed: true, Reason: ReasonAllowed, Rule: base + ".allow"}
}
