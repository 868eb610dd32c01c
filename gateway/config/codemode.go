package config

import (
	"fmt"
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

// validateCodeMode checks an agent's tool_mode and code_mode.
func (p *parser) validateCodeMode(a *Agent, key []string) {
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
	c := a.CodeMode
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"max_tool_calls", c.MaxToolCalls < 1},
		{"timeout", c.Timeout < 0},
		{"max_output", c.MaxOutput < 1},
		{"max_value_bytes", c.MaxValueBytes < 1024},
		{"max_concurrent", c.MaxConcurrent < 1},
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
