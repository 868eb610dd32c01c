package config

import (
	"fmt"
	"strings"
	"time"
)

// Tool modes of an llm agent (Agent.ToolMode).
const (
	ToolModeTools = "tools" // default: one model tool per downstream tool
	ToolModeCode  = "code"  // the model gets run_script (agents/codemode)
)

// Code mode defaults (CodeMode).
const (
	DefaultCodeMaxSteps      = 1_000_000
	DefaultCodeMaxToolCalls  = 50
	DefaultCodeMaxOutput     = 64 << 10
	DefaultCodeMaxValueBytes = 4 << 20
	DefaultCodeMaxConcurrent = 4
)

// CodeMode bounds the scripts of an agent's run_script (an llm agent with
// tool_mode code, a toolbox).
type CodeMode struct {
	// MaxSteps bounds a script's Starlark execution steps; default 1000000.
	MaxSteps uint64 `yaml:"max_steps"`
	// MaxToolCalls bounds the tool calls of one script; default 50.
	MaxToolCalls int `yaml:"max_tool_calls"`
	// Timeout bounds one script's wall-clock time, its tool calls
	// included; default the agent's timeout.
	Timeout time.Duration `yaml:"timeout"`
	// MaxOutput bounds what a script prints plus its result, in bytes;
	// default 65536.
	MaxOutput int `yaml:"max_output"`
	// MaxValueBytes bounds the size of any one value a script builds
	// (strings in bytes, lists, tuples, dicts and sets at 16 bytes an
	// element, numbers by their digits); all the values a script builds
	// together, counted as they are built, are bounded by 16 times it.
	// Default 4194304 (4 MiB).
	MaxValueBytes int `yaml:"max_value_bytes"`
	// MaxConcurrent bounds the scripts of this agent running at once; a
	// script past it is refused; default 4.
	MaxConcurrent int `yaml:"max_concurrent"`
}

// ApplyDefaults fills the fields left zero; agentTimeout is the timeout's
// default.
func (c *CodeMode) ApplyDefaults(agentTimeout time.Duration) {
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultCodeMaxSteps
	}
	if c.MaxToolCalls == 0 {
		c.MaxToolCalls = DefaultCodeMaxToolCalls
	}
	if c.Timeout == 0 {
		c.Timeout = agentTimeout
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = DefaultCodeMaxOutput
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = DefaultCodeMaxValueBytes
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultCodeMaxConcurrent
	}
}

// CodeModeOn reports whether a offers run_script.
func (a *Agent) CodeModeOn() bool {
	return a.Kind == KindToolbox || a.Kind == KindLLM && a.ToolMode == ToolModeCode
}

// ScriptName is a server's or a tool's name in a run_script script
// (agents/codemode): every character that is not an ASCII letter, digit
// or underscore becomes "_"; a name that starts with a digit gets a
// leading "_"; a Starlark or reserved Python keyword gets a trailing "_".
func ScriptName(name string) string {
	b := []rune(name)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	if scriptKeywords[s] {
		s += "_"
	}
	return s
}

var scriptKeywords = wordSet(`and break continue def elif else for if in lambda load not or pass return while
	as assert async await class del except finally from global import is nonlocal raise try with yield`)

// scriptBuiltins are the names a script's own values take: Starlark's
// universe and code mode's.
var scriptBuiltins = wordSet(`None True False abs any all bool bytes chr dict dir enumerate fail float getattr hasattr
	hash int len list max min ord print range repr reversed set sorted str tuple type zip result is_error`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// ScriptReserved reports whether a server may not take name in a script.
func ScriptReserved(name string) bool { return scriptBuiltins[name] || strings.HasPrefix(name, "_cm_") }

// CheckScriptServers refuses servers whose script names collide with each
// other's or with a builtin's.
func CheckScriptServers(servers []string) error {
	seen := map[string]string{}
	for _, s := range servers {
		id := ScriptName(s)
		if ScriptReserved(id) {
			return fmt.Errorf("server %q is %q in a run_script script, which is a builtin's name", s, id)
		}
		if other, dup := seen[id]; dup {
			return fmt.Errorf("servers %q and %q are both %q in a run_script script", other, s, id)
		}
		seen[id] = s
	}
	return nil
}

// validateCodeMode checks an agent's tool_mode and code_mode.
func (p *parser) validateCodeMode(c *Config, a *Agent, key []string) {
	at := func(k ...string) []string { return append(append([]string{}, key...), k...) }
	switch a.ToolMode {
	case "", ToolModeTools:
	case ToolModeCode:
		if a.Kind != KindLLM {
			p.addPath(at("tool_mode"), "tool_mode belongs to kind llm (a toolbox always offers run_script)")
		}
	default:
		p.addPath(at("tool_mode"), fmt.Sprintf("unknown tool_mode %q (want tools or code)", a.ToolMode))
	}
	if p.agentKey(a.Name, "code_mode") != nil && !a.CodeModeOn() {
		p.addPath(at("code_mode"), "code_mode bounds run_script, which only a toolbox or an llm agent with tool_mode: code offers")
	}
	if err := CheckScriptServers(a.Servers); err != nil {
		switch {
		case a.Kind == KindLLM && a.ToolMode == ToolModeCode:
			p.addPath(at("servers"), err.Error())
		case a.Kind == KindToolbox:
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s:%d: agents.%s.servers: %v; the toolbox does not offer run_script",
				p.file, lineOf(p.root, []string{"agents", a.Name, "servers"}), a.Name, err))
		}
	}
	cm := a.CodeMode
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"max_tool_calls", cm.MaxToolCalls < 1},
		{"timeout", cm.Timeout < 0},
		{"max_output", cm.MaxOutput < 1},
		{"max_value_bytes", cm.MaxValueBytes < 1024},
		{"max_concurrent", cm.MaxConcurrent < 1},
	} {
		if f.bad {
			msg := "must be at least 1"
			switch f.name {
			case "timeout":
				msg = "must not be negative"
			case "max_value_bytes":
				msg = "must be at least 1024"
			}
			p.addPath(at("code_mode", f.name), msg)
		}
	}
}
