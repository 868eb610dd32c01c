package gateway

import (
	"context"
	"time"
)

// healthInterval is how often every agent's health is probed in the
// background, so pallasgw_agent_health (and the alerts on it) follow the
// downstreams even when no client calls get_health.
const healthInterval = 30 * time.Second

// startHealthLoop probes the snapshot's agents now and every healthInterval
// (after the provider preflight), and at once when a provider's check
// result flips, until the snapshot is retired or the gateway stops.
// Background probes have no caller: servers that take the caller's
// credentials are reported "not probed without a caller" (agents.Health),
// and only these probes set pallasgw_agent_health.
func (g *Gateway) startHealthLoop(s *Snapshot) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		select { // probe once the provider preflight has a result
		case <-s.preflight.done:
		case <-s.done:
			return
		case <-g.baseCtx.Done():
			return
		}
		t := time.NewTicker(healthInterval)
		defer t.Stop()
		for {
			// Pinned like a request: the snapshot closes (and its removed
			// agents' series are deleted) only after the round.
			s.active.Add(1)
			if s.retired.Load() {
				s.release()
				return
			}
			for _, name := range s.agents.Names() {
				ctx, cancel := context.WithTimeout(g.baseCtx, 10*time.Second)
				s.agents.Get(name).Health(ctx, nil)
				cancel()
			}
			s.release()
			select {
			case <-t.C:
			case <-s.preflight.changed:
				s.agents.ExpireHealth()
			case <-s.done:
				return
			case <-g.baseCtx.Done():
				return
			}
		}
	}()
}
