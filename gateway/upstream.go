package gateway

// Callers' own upstream credentials (mcp.servers.X.oauth): one
// upstreamauth.Manager for the process, made by the first config that has
// oauth and told of every config after it; its vault lives in the session
// store, its connect pages at /connect.

import (
	"net/http"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/gateway/upstreamauth"
	"github.com/pallasgw/pallasgw/policy"
)

// upstreamFor returns the Manager for cfg, made on first need (nil while
// no config has had oauth). The credentials key is read when it is made:
// a reload that changes it is told a restart is needed.
func (g *Gateway) upstreamFor(cfg *config.Config, auth *policy.Authenticator) (agents.UpstreamCredentials, error) {
	if m := g.upstream.Load(); m != nil {
		return m, nil
	}
	if !cfg.AnyOAuth() {
		return nil, nil
	}
	var kv upstreamauth.KV
	if g.sessions != nil {
		kv = g.sessions
	}
	m, err := upstreamauth.New(cfg, auth, upstreamauth.Options{KV: kv, Logger: g.log, Metrics: g.metrics})
	if err != nil {
		return nil, err
	}
	g.upstream.Store(m)
	h := m.Handler()
	g.upstreamHandler.Store(&h)
	return m, nil
}

// upstreamApplied tells the Manager of the config that now serves.
func (g *Gateway) upstreamApplied(s *Snapshot) {
	if m := g.upstream.Load(); m != nil {
		m.Update(s.cfg, s.auth)
	}
}

// connect serves /connect/...: 404 while no config has had oauth.
func (g *Gateway) connect(w http.ResponseWriter, r *http.Request) {
	h := g.upstreamHandler.Load()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	(*h).ServeHTTP(w, r)
}

func (g *Gateway) closeUpstream() {
	if m := g.upstream.Load(); m != nil {
		m.Close()
	}
}

// sameCredentials reports two credentials sections with the same keys.
func sameCredentials(a, b config.Credentials) bool {
	if a.Key.Value() != b.Key.Value() || len(a.PreviousKeys) != len(b.PreviousKeys) {
		return false
	}
	for i := range a.PreviousKeys {
		if a.PreviousKeys[i].Value() != b.PreviousKeys[i].Value() {
			return false
		}
	}
	return true
}
