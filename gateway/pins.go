package gateway

import (
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// pinPolicy builds the pins policy of cfg: the pins file, parsed (a
// missing or broken one fails the load, so a start stops and a reload
// keeps the serving pins), and each server's pin mode and checks.
func pinPolicy(cfg *config.Config) (*pins.Policy, error) {
	p := &pins.Policy{Path: cfg.PinsPath, Servers: make(map[string]pins.ServerPolicy, len(cfg.MCP.Servers))}
	if cfg.PinsPath != "" {
		f, err := pins.Load(cfg.PinsPath)
		if err != nil {
			return nil, err
		}
		p.File = f
	}
	for name, s := range cfg.MCP.Servers {
		pats, err := pins.CompilePatterns(s.ToolChecks.Patterns)
		if err != nil {
			return nil, cfg.ErrorAt([]string{"mcp", "servers", name, "tool_checks", "patterns"}, err.Error())
		}
		p.Servers[name] = pins.ServerPolicy{Pin: pins.Mode(s.PinTools), Checks: pins.Checks{
			Refuse: s.ToolChecks.Mode == "refuse", MaxDescription: s.ToolChecks.MaxDescription, Patterns: pats,
		}}
	}
	return p, nil
}

// DownstreamSpec is the client spec the gateway builds for cfg's server
// name (`pallasgw pins` reads tool lists with it).
func DownstreamSpec(cfg *config.Config, name string) (mcpclient.ServerSpec, bool) {
	for _, s := range serverSpecs(cfg) {
		if s.Name == name {
			return s, true
		}
	}
	return mcpclient.ServerSpec{}, false
}
