package gateway

// Protected resource metadata (RFC 9728): in auth mode jwt every
// agent's MCP endpoint is an OAuth 2.1 resource server, and a client that
// is refused (401) finds here which authorization server issues tokens for
// it and which scopes it needs.

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/pallasgw/pallasgw/agents"
)

const metadataPath = "/.well-known/oauth-protected-resource"

// resourceURL is the canonical URL of agent's endpoint as the request
// reached it: {public_url or request base}/agents/{name}/mcp on the main
// port, {request base}/mcp on a legacy port.
func (s *Snapshot) resourceURL(r *http.Request, agent string) string {
	if r.URL.Path == "/mcp" || r.URL.Path == "/mcp/" {
		return s.requestBase(r) + "/mcp"
	}
	return s.baseURL(r) + "/agents/" + agent + "/mcp"
}

// metadataURL is where the metadata of agent's endpoint is served (on the
// main port).
func (s *Snapshot) metadataURL(r *http.Request, agent string) string {
	return s.baseURL(r) + metadataPath + "/agents/" + agent + "/mcp"
}

// resourceMetadata answers GET /.well-known/oauth-protected-resource and
// .../agents/{name}/mcp; 404 unless auth.mode is jwt.
func (g *Gateway) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	rid := agents.RequestID(r.Context())
	v := s.auth.JWT()
	if v == nil {
		writeError(w, http.StatusNotFound, rid, "no authorization server is configured (auth.mode is not jwt)")
		return
	}
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name,omitempty"`
	}{AuthorizationServers: s.cfg.Auth.JWT.AuthorizationServers, BearerMethodsSupported: []string{"header"}}
	if name := chi.URLParam(r, "name"); name != "" {
		a := s.cfg.Agents[name]
		if a == nil {
			writeError(w, http.StatusNotFound, rid, "unknown agent "+quoteClipped(name))
			return
		}
		doc.Resource = s.baseURL(r) + "/agents/" + name + "/mcp"
		doc.ScopesSupported = v.RequiredScopes(name)
		doc.ResourceName = a.Title
	} else {
		doc.Resource = s.baseURL(r)
		doc.ScopesSupported = v.AllScopes()
		doc.ResourceName = s.cfg.Name
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_ = json.NewEncoder(w).Encode(doc)
}

// requestBase is the scheme and host the request used (trusted proxies'
// X-Forwarded-* believed), without public_url.
func (s *Snapshot) requestBase(r *http.Request) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if s.trusted.contains(r.RemoteAddr) {
		if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
			scheme = p
		}
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" && validHost(h) {
			host = h
		}
	}
	return scheme + "://" + host
}
