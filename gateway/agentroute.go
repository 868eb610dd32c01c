package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/policy"
)

// serveAgent is the MCP endpoint of one agent, on the main port
// (/agents/{name}/mcp) and on legacy ports (/mcp). The checks run in this
// order: snapshot → agent exists → Origin → inbound auth → method → body
// limit → cancellation guard → the agent's mcp-go handler.
func (g *Gateway) serveAgent(w http.ResponseWriter, r *http.Request, s *Snapshot, name string) {
	rid := agents.RequestID(r.Context())
	g.calls.add()
	defer g.calls.done()
	if g.draining.Load() {
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, rid, "gateway is shutting down; retry on another instance")
		return
	}
	a := s.agents.Get(name)
	if a == nil {
		writeError(w, http.StatusNotFound, rid, fmt.Sprintf("unknown agent %q", name))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.origins[o] && !s.origins["*"] {
		writeError(w, http.StatusForbidden, rid, fmt.Sprintf("origin %q is not in allowed_origins", o))
		return
	}
	id, ok := g.authorize(w, r, s, name, rid)
	if !ok {
		return
	}
	r = r.WithContext(policy.WithIdentity(r.Context(), id))
	switch r.Method {
	case http.MethodPost, http.MethodDelete:
	case http.MethodGet:
		// Stateless: there is no standalone server-to-client stream. mcp-go
		// would key every GET stream on the empty session id and mix
		// clients' notifications, so answer as the transport allows.
		w.Header().Set("Allow", "POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, rid, "this stateless endpoint has no GET stream; POST requests")
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, rid, "method not allowed")
		return
	}
	if r.Method == http.MethodPost && !g.readBody(w, r, s, rid) {
		return
	}
	g.metrics.Inflight.WithLabelValues(name).Inc()
	defer g.metrics.Inflight.WithLabelValues(name).Dec()
	tw, tr := agents.TrackStream(w, r)
	a.Handler().ServeHTTP(tw, tr)
}

// readBody buffers the POST body within limits.max_body_bytes (413 past
// it) and drops notifications/cancelled that mcp-go would misroute.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, s *Snapshot, rid string) bool {
	limit := s.cfg.Limits.MaxBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, nil, -32700, rid, "reading request body: "+err.Error())
		return false
	}
	if int64(len(body)) > limit {
		writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, -32600, rid,
			fmt.Sprintf("request body larger than limits.max_body_bytes (%d bytes)", limit))
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if isUnroutableCancel(body, r.Header.Get("Mcp-Session-Id")) {
		// In stateless mode mcp-go keys in-flight requests by ":"+id, so a
		// cancel from one client would cancel another client's request with
		// the same id. Without a session there is no safe owner: drop it. A
		// caller's own request still ends when its connection closes.
		w.WriteHeader(http.StatusAccepted)
		return false
	}
	return true
}

func isUnroutableCancel(body []byte, session string) bool {
	if session != "" || !bytes.Contains(body, []byte("notifications/cancelled")) {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		return false // not one message (a batch, or broken): mcp-go answers it
	}
	return msg.Method == "notifications/cancelled"
}

// agentRoute is the main port's /agents/{name}/mcp.
func (g *Gateway) agentRoute(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	g.serveAgent(w, r, s, chi.URLParam(r, "name"))
}

// authorize applies inbound auth (SPEC §7) and the caller's agent rule,
// auditing every decision: 401 with WWW-Authenticate or 403 when refused.
func (g *Gateway) authorize(w http.ResponseWriter, r *http.Request, s *Snapshot, agent, rid string) (policy.Identity, bool) {
	start := time.Now()
	id, status, reason := s.auth.Check(r, agent)
	d := policy.Decision{Allowed: status == 0, Reason: reason}
	if d.Allowed {
		d = s.callers.AllowAgent(id.Caller, agent)
		if !d.Allowed {
			status = http.StatusForbidden
		}
	}
	if s.auth.Mode() == policy.ModeTokens || !d.Allowed {
		s.auditor.Record(r.Context(), policy.AuditEvent{RequestID: rid, Caller: id.Caller, Agent: agent, Decision: d, Latency: time.Since(start)})
	}
	if d.Allowed {
		return id, true
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pallasgw"`)
	}
	writeError(w, status, rid, "access denied: "+d.Reason)
	return id, false
}
