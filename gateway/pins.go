package gateway

import (
	"slices"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// CheckPins reads cfg's pins file as serve does, and reports a missing or
// broken one as serve does: "file:line: pins: message" (validate).
func CheckPins(cfg *config.Config) error {
	_, err := pinPolicy(cfg)
	return err
}

// pinPolicy builds the pins policy of cfg: the pins file, parsed (a
// missing or broken one fails the load, so a start stops and a reload
// keeps the serving pins), and each server's pin mode and checks. Its
// errors are config errors, at the pins key or the server's key.
func pinPolicy(cfg *config.Config) (*pins.Policy, error) {
	p := &pins.Policy{Path: cfg.PinsPath, Servers: make(map[string]pins.ServerPolicy, len(cfg.MCP.Servers))}
	if cfg.PinsPath != "" {
		f, err := pins.Load(cfg.PinsPath)
		if err != nil {
			return nil, cfg.ErrorAt([]string{"pins"}, err.Error())
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

// pinChanges names the pins a reload changed ("pin dict/lookup added",
// "... changed", "... removed"): an approval or a rejection written by
// `pallasgw pins` or the console, or an edit of the pins file.
func pinChanges(a, b *pins.Policy) []string {
	flat := func(p *pins.Policy) map[string]*pins.Entry {
		m := map[string]*pins.Entry{}
		if p == nil || p.File == nil {
			return m
		}
		for server, tools := range p.File.Servers {
			for tool, e := range tools {
				m[server+"/"+tool] = e
			}
		}
		return m
	}
	return diffMap("pin", flat(a), flat(b), func(x, y *pins.Entry) bool {
		return x.Hash == y.Hash && slices.Equal(x.Rejected, y.Rejected)
	})
}
