package gateway

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/pins"
)

// statusHandler serves GET /-/status. It shows no secret: agents'
// configs are summarised, never dumped.
func (g *Gateway) statusHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(g.status())
}

// status is the document of GET /-/status, also the answer of a toolbox's
// get_gateway_status: the serving config's file, hash, agents (summarised,
// never dumped), reloads, listeners, warnings, the caller policy and the
// downstream servers' transports and addresses. It holds no secret.
func (g *Gateway) status() any {
	s := g.acquire()
	defer s.release()
	type agentStatus struct {
		Name    string   `json:"name"`
		Kind    string   `json:"kind"`
		Model   string   `json:"model,omitempty"`
		Servers []string `json:"servers"`
		Port    int      `json:"port,omitempty"`
	}
	out := struct {
		ConfigFile string         `json:"config_file"`
		ConfigHash string         `json:"config_hash"`
		LoadedAt   time.Time      `json:"loaded_at"`
		LastReload *reloadStatus  `json:"last_reload"`
		Reloads    []reloadStatus `json:"reloads"` // the last maxReloadHistory results, oldest first
		Agents     []agentStatus  `json:"agents"`
		Listeners  []string       `json:"listeners"`
		// Warnings are the serving config's non-fatal findings (rules
		// that select nothing, ignored keys), as validate prints them.
		Warnings []string `json:"warnings"`
		// PendingTools are the tool definitions awaiting a reviewer
		// (pin_tools, tool_checks), with the hashes to compare.
		PendingTools []pins.PendingTool `json:"pending_tools"`
		// Policy is the caller policy in force; Servers the downstream
		// servers' transports and addresses (no credential of either).
		Policy  policyStatus   `json:"policy"`
		Servers []serverStatus `json:"servers"`
		// UpstreamConnections counts callers' own connections to servers
		// with oauth that this replica knows of, by server and state.
		UpstreamConnections map[string]map[string]int `json:"upstream_connections,omitempty"`
	}{Policy: newPolicyStatus(s.cfg.Policy), Servers: newServerStatus(s.cfg), PendingTools: append([]pins.PendingTool{}, g.pins.Pending()...), ConfigFile: s.cfg.File, ConfigHash: s.cfg.Hash, LoadedAt: s.loadedAt.UTC(), LastReload: g.lastReload.Load(), Reloads: g.reloads.snapshot(), Agents: []agentStatus{},
		Warnings: append([]string{}, s.cfg.Warnings...)}
	for _, name := range s.agents.Names() {
		a := s.cfg.Agents[name]
		servers := a.Servers
		if servers == nil {
			servers = []string{}
		}
		out.Agents = append(out.Agents, agentStatus{Name: name, Kind: a.Kind, Model: a.Model, Servers: servers, Port: a.Port})
	}
	if g.mainLn != nil {
		out.Listeners = append(out.Listeners, g.mainLn.Addr().String())
	}
	if m := g.upstream.Load(); m != nil {
		out.UpstreamConnections = m.Counts()
	}
	out.Listeners = append(out.Listeners, g.listeners.addrs()...)
	sort.Strings(out.Listeners[min(1, len(out.Listeners)):])
	return out
}

// reloadHandler serves POST /-/reload: it reloads at once and answers when
// done, with the new hash or the error (file:line: key: message).
func (g *Gateway) reloadHandler(w http.ResponseWriter, r *http.Request) {
	res, err := g.Reload("api")
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": err.Error(), "config_hash": res.Hash,
			"request_id": agents.RequestID(r.Context())})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "config_hash": res.Hash, "unchanged": res.Unchanged, "changes": res.Changes})
}
