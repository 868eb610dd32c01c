package gateway

import (
	"fmt"
	"sort"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// keepAgent narrows a freshly loaded cfg (not yet shared) to the agent
// serve --agent names and the agents it runs, transitively: they run in
// process and must be built. Every other agent is left out: not built,
// not routed, not in the registry, its legacy port not bound.
func keepAgent(cfg *config.Config, name string) error {
	if cfg.Agents[name] == nil {
		names := make([]string, 0, len(cfg.Agents))
		for n := range cfg.Agents {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("--agent %s: no such agent in %s (agents: %v)", name, cfg.File, names)
	}
	keep := map[string]*config.Agent{}
	var add func(n string)
	add = func(n string) {
		a := cfg.Agents[n]
		if a == nil || keep[n] != nil {
			return
		}
		keep[n] = a
		for _, d := range config.Deps(a) {
			add(d)
		}
	}
	add(name)
	cfg.Agents = keep
	return nil
}
