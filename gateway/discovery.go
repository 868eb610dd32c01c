package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/registry"
)

// Discovery: each agent's server card at <its MCP URL>/server-card
// and the AI catalog at /.well-known/ai-catalog.json listing them. Both are
// public metadata: no auth, no Origin check, Access-Control-Allow-Origin: *.
// They are rendered from the snapshot's registry (so a reload changes them)
// with the URLs the caller reaches the gateway by, and carry a strong ETag
// of the bytes; Cache-Control: no-cache makes clients revalidate with
// If-None-Match (304) rather than keep a card a reload has changed.

// serverCard is /agents/{name}/mcp/server-card on the main port.
func (g *Gateway) serverCard(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	name := chi.URLParam(r, "name")
	base := s.baseURL(r)
	body, etag, ok := s.registry.CardJSON(name, base+"/agents/"+name+"/mcp")
	serveDiscovery(w, r, s, body, etag, ok, registry.CardMediaType, name)
}

// serverCardLegacy is /mcp/server-card on an agent's legacy port: the card
// names the legacy URL, as the legacy registry does.
func (g *Gateway) serverCardLegacy(w http.ResponseWriter, r *http.Request, s *Snapshot, port int) {
	name := s.ports[port].agent
	body, etag, ok := s.registry.CardJSON(name, "http://"+s.legacyHost(r)+":"+strconv.Itoa(port)+"/mcp")
	serveDiscovery(w, r, s, body, etag, ok, registry.CardMediaType, name)
}

// aiCatalog is /.well-known/ai-catalog.json on the main port.
func (g *Gateway) aiCatalog(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	base := s.baseURL(r)
	mcpURL := func(agent string) string { return base + "/agents/" + agent + "/mcp" }
	body, etag := s.registry.CatalogJSON(base, mcpURL, func(agent string) string { return mcpURL(agent) + "/server-card" })
	serveDiscovery(w, r, s, body, etag, true, registry.CatalogMediaType, "")
}

// serveDiscovery answers GET/HEAD with body (or 304 when If-None-Match
// matches), OPTIONS with the CORS preflight answer, anything else with 405;
// found false is a 404 naming the agent.
func serveDiscovery(w http.ResponseWriter, r *http.Request, s *Snapshot, body []byte, etag string, found bool, contentType, agent string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
	h.Set("Access-Control-Expose-Headers", "ETag")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, agents.RequestID(r.Context()), "method not allowed")
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, agents.RequestID(r.Context()), "unknown agent "+quoteClipped(agent))
		return
	}
	if s.cfg.PublicURL == "" && s.trusted.any() {
		// The URLs inside follow these headers from trusted proxies.
		h.Set("Vary", "X-Forwarded-Host, X-Forwarded-Proto")
	}
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 §13.1.2): "*",
// or any listed tag equal to etag once W/ is dropped.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
