package gateway

import (
	"net/http"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/policy"
)

// serveDirectory is POST /mcp with agents_endpoint: true: every
// agent the caller may use, one tool each. The checks are serveAgent's:
// snapshot → enabled → Origin → inbound auth (a caller the gateway does
// not know gets 401; which agents it may use is decided per agent, as on
// /agents/{name}/mcp) → method → body limit → the agents' MCP server.
func (g *Gateway) serveDirectory(w http.ResponseWriter, r *http.Request) {
	rid := agents.RequestID(r.Context())
	g.calls.add()
	defer g.calls.done()
	if g.draining.Load() {
		g.refuseDraining(w, rid, "")
		return
	}
	s := g.acquire()
	defer s.release()
	if s.directory == nil {
		writeError(w, http.StatusNotFound, rid, "no route for \"/mcp\" (agents_endpoint is off)")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !originAllowed(s.origins, o, r.Host) {
		writeError(w, http.StatusForbidden, rid, "origin "+quoteClipped(o)+" is not in allowed_origins (nor a loopback page calling a loopback host)")
		return
	}
	resource := s.baseURL(r) + "/mcp"
	id, status, reason, _ := s.auth.CheckFor(r, "", resource)
	if status == http.StatusUnauthorized {
		g.metrics.AuthFailures.WithLabelValues(reason).Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="pallasgw"`)
		writeError(w, status, rid, "access denied: "+reason)
		return
	}
	if id.Claims != nil {
		id.Rule = s.callers.MatchRule(id.Claims)
	}
	allowed := func(agent string) bool {
		_, st, _, _ := s.auth.CheckFor(r, agent, resource)
		return st == 0 && s.callers.AllowAgent(id.PolicyKey(), agent).Allowed
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, rid, "this stateless endpoint has no GET stream; POST requests")
		return
	}
	if !g.takeRequest(w, r, s, id, rid, "") {
		return
	}
	if _, ok := g.readBody(w, r, s, rid, ""); !ok {
		return
	}
	r = r.WithContext(policy.WithIdentity(r.Context(), id))
	if id.Authenticated && id.Claims == nil && s.auth.Mode() == policy.ModeJWT {
		r.Header = r.Header.Clone()
		r.Header.Del("Authorization") // the gateway's own static token never travels
	}
	inflight := g.metrics.Inflight.WithLabelValues("mcp")
	inflight.Inc()
	defer inflight.Dec()
	tw, tr := endpoint.TrackStream(w, r, rid)
	s.directory.Serve(tw, tr, allowed)
}
