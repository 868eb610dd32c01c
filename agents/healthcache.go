package agents

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

const (
	healthTTL = 10 * time.Second
	// maxHealthEntries bounds one agent's cached health results: one per
	// outbound credential set seen within healthTTL. Past it, stale
	// entries go first, then any (the next caller probes again).
	maxHealthEntries = 256
)

// backgroundKey is the cache key of the probe that needs no caller: the
// background probe, and every caller of an agent none of whose servers
// (its own or its sub-agents') takes anything of the caller.
const backgroundKey = ""

// healthCache holds one agent's health results for healthTTL, one per
// outbound credential set (healthKey): a downstream that takes the caller's
// credentials may be healthy for one caller and refuse another, and neither
// may see the other's result.
type healthCache struct {
	mu      sync.Mutex
	entries map[string]*healthEntry
}

// healthEntry is one credential set's result; mu is held while it is
// probed, so that callers with the same credentials share one probe.
type healthEntry struct {
	mu     sync.Mutex
	at     time.Time
	result Health
	stamp  atomic.Int64 // at, in Unix nanoseconds, readable without mu (prune)
}

// entry returns key's entry, adding it (within maxHealthEntries) when absent.
func (c *healthCache) entry(key string) *healthEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return e
	}
	if c.entries == nil {
		c.entries = map[string]*healthEntry{}
	}
	if len(c.entries) >= maxHealthEntries {
		c.prune()
	}
	e := &healthEntry{}
	c.entries[key] = e
	return e
}

// prune drops stale entries, then any but the background one until there is
// room for one more. A dropped entry being probed is finished by its prober
// and forgotten. c.mu is held.
func (c *healthCache) prune() {
	cutoff := time.Now().Add(-healthTTL).UnixNano()
	for k, e := range c.entries {
		if e.stamp.Load() < cutoff && k != backgroundKey {
			delete(c.entries, k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < maxHealthEntries {
			return
		}
		if k != backgroundKey {
			delete(c.entries, k)
		}
	}
}

// expire forgets every result.
func (c *healthCache) expire() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

// healthKey is the cache key of a probe for a caller whose headers are
// inbound: backgroundKey without a caller (inbound nil) or when no server
// the agent depends on takes anything of the caller, else a SHA-256
// fingerprint (policy.Fingerprint, kept in memory only) of what those
// servers would receive of the caller: the forwarded headers as the policy
// composes them and, for token exchange, the token exchanged.
func (a *Agent) healthKey(inbound http.Header) string {
	if inbound == nil {
		return backgroundKey
	}
	var creds http.Header
	quiet := policy.Composer{} // rejections are logged and counted by the probe itself
	if c := a.set.deps.Composer; c != nil {
		quiet.Blocklist = c.Blocklist
	}
	for _, srv := range a.set.healthServers(a.Name) {
		if !a.set.takesCaller(srv) {
			continue
		}
		if creds == nil {
			creds = http.Header{}
		}
		rules := a.set.rules[srv]
		for name, vs := range quiet.Compose(rules, inbound, a.set.deps.InboundAuthMayTravel) {
			if _, static := rules.Static[name]; !static {
				creds[srv+"/"+name] = vs
			}
		}
		if a.set.exchanges(srv) || a.set.deps.Config.MCP.Servers[srv].OAuth != nil {
			if tok, ok := bearerOf(inbound); ok {
				creds[srv+"/exchange"] = []string{tok}
			}
		}
	}
	if creds == nil {
		return backgroundKey
	}
	return "caller:" + policy.Fingerprint(creds)
}

// takesCaller reports whether server receives anything of the caller: a
// forward_headers mapping, the caller's Authorization (forward_inbound_auth
// where inbound auth may travel), a token exchanged for the caller's, or
// the caller's own token (oauth).
// Its health then depends on who asks, and the background probe, which has
// no caller, leaves it out.
func (s *Set) takesCaller(server string) bool {
	srv := s.deps.Config.MCP.Servers[server]
	if srv == nil || srv.Transport == "stdio" {
		return false
	}
	rules := s.rules[server]
	for src := range rules.Forward {
		if s.deps.InboundAuthMayTravel || !strings.EqualFold(src, "Authorization") {
			return true
		}
	}
	return rules.ForwardInboundAuth && s.deps.InboundAuthMayTravel || s.exchanges(server) || srv.OAuth != nil
}

// exchanges reports whether server gets a token exchanged for the caller's
// (token_exchange, and no static Authorization that would win).
func (s *Set) exchanges(server string) bool {
	srv := s.deps.Config.MCP.Servers[server]
	if srv == nil || srv.TokenExchange == nil {
		return false
	}
	for name := range srv.Headers {
		if strings.EqualFold(name, "Authorization") {
			return false
		}
	}
	return true
}

// healthServers lists the servers an agent's health depends on: its own and
// its sub-agents', transitively (validation refuses cycles).
func (s *Set) healthServers(agent string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		a := s.agents[name]
		if a == nil || seen[name] {
			return
		}
		seen[name] = true
		out = append(out, a.Config.Servers...)
		for _, sub := range config.Deps(a.Config) {
			walk(sub)
		}
	}
	walk(agent)
	return out
}
