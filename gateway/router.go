package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/policy"
)

// router is the main port's routes. Every route goes through chain.
func (g *Gateway) router() http.Handler {
	r := chi.NewRouter()
	r.Method(http.MethodGet, "/.well-known/mcp/server.json", g.browserChain("registry", http.HandlerFunc(g.registryMain)))
	// An endpoint with a trailing slash is the same endpoint (clients and
	// proxies add one); its canonical URL stays the one without.
	agent, directory := g.browserChain("agent", http.HandlerFunc(g.agentRoute)), g.browserChain("agent", http.HandlerFunc(g.serveDirectory))
	r.Handle("/agents/{name}/mcp", agent)
	r.Handle("/agents/{name}/mcp/", agent)
	r.Handle("/mcp", directory) // agents_endpoint
	r.Handle("/mcp/", directory)
	r.Method(http.MethodGet, metadataPath, g.publicChain("registry", http.HandlerFunc(g.resourceMetadata)))
	r.Method(http.MethodGet, metadataPath+"/agents/{name}/mcp", g.publicChain("registry", http.HandlerFunc(g.resourceMetadata)))
	r.Handle("/agents/{name}/mcp/server-card", g.publicChain("registry", http.HandlerFunc(g.serverCard)))
	r.Handle("/.well-known/ai-catalog.json", g.publicChain("registry", http.HandlerFunc(g.aiCatalog)))
	connect := g.publicChain("connect", http.HandlerFunc(g.connect)) // its own Origin check (upstreamauth)
	r.Handle("/connect", connect)
	r.Handle("/connect/*", connect)
	r.Method(http.MethodGet, "/metrics", g.chain("metrics", g.metrics.Handler()))
	r.Method(http.MethodGet, "/healthz", g.chain("health", http.HandlerFunc(g.healthz)))
	r.Method(http.MethodGet, "/readyz", g.chain("health", http.HandlerFunc(g.readyz)))
	r.Method(http.MethodPost, "/-/reload", g.chain("admin", g.adminGuard(http.HandlerFunc(g.reloadHandler))))
	r.Method(http.MethodGet, "/-/status", g.chain("admin", g.adminGuard(http.HandlerFunc(g.statusHandler))))
	// Tool pins' review (pinsadmin.go): the console's panel reads and posts these.
	r.Method(http.MethodGet, "/-/pins", g.chain("admin", g.adminGuard(http.HandlerFunc(g.pinsViewHandler))))
	r.Method(http.MethodPost, "/-/pins/approve", g.chain("admin", g.adminGuard(g.pinsReviewHandler(true))))
	r.Method(http.MethodPost, "/-/pins/reject", g.chain("admin", g.adminGuard(g.pinsReviewHandler(false))))
	r.Mount("/debug", g.chain("admin", g.adminGuard(middleware.Profiler()))) // pprof, admin only
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, agents.RequestID(r.Context()), "no route for "+quoteClipped(r.URL.Path))
	})
	// The console: 404 when the config says console: false; GET and HEAD
	// (the handler answers 405 to the rest).
	console := g.chain("console", g.consoleHandler(notFound))
	r.Handle("/", console)
	r.Handle("/console/*", console)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { g.requestID(notFound).ServeHTTP(w, r) })
	return r
}

func (g *Gateway) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if g.unready.Load() || g.current.Load() == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("draining\n"))
		return
	}
	w.Write([]byte("ready\n"))
}

// adminGuard applies admin.token of the current snapshot (loopback only
// when it is empty).
func (g *Gateway) adminGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := g.acquire()
		token := s.cfg.Admin.Token.Value()
		s.release()
		policy.AdminGuard(token, func(w http.ResponseWriter, r *http.Request, status int, reason string) {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pallasgw-admin"`)
			}
			writeError(w, status, agents.RequestID(r.Context()), reason)
		})(next).ServeHTTP(w, r)
	})
}

// registryMain serves the registry on the main port with URLs on public_url
// or on the scheme and host the caller used.
func (g *Gateway) registryMain(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	base := s.baseURL(r)
	writeRegistry(w, s.registry.JSON(func(agent string, _ int) string { return base + "/agents/" + agent + "/mcp" }))
}

func writeRegistry(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(body)
}

// baseURL is public_url, else the request's scheme and host, taking
// X-Forwarded-Proto/Host only from trusted proxies.
func (s *Snapshot) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	return s.requestBase(r)
}

func firstValue(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.TrimSpace(v)
}

// validHost accepts host[:port] without anything that could break a URL.
func validHost(h string) bool {
	return h != "" && !strings.ContainsAny(h, "/\\?#@ \t\r\n\"'<>")
}

// legacyHost is the host used in legacy-port URLs: config host, else the
// request's host name without its port.
func (s *Snapshot) legacyHost(r *http.Request) string {
	if s.cfg.Host != "" {
		return s.cfg.Host
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host
}

// mainPort is the port of listen, for legacy registry URLs of agents
// without a legacy port.
func (s *Snapshot) mainPort() string {
	_, p, _ := net.SplitHostPort(s.cfg.Listen)
	return p
}

// trustedProxies is the parsed trusted_proxies list.
type trustedProxies struct{ prefixes []netip.Prefix }

func newTrustedProxies(list []string) (*trustedProxies, error) {
	t := &trustedProxies{}
	for _, s := range list {
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, err
			}
			s = a.String() + "/" + strconv.Itoa(a.BitLen())
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		t.prefixes = append(t.prefixes, p.Masked())
	}
	return t, nil
}

func (t *trustedProxies) any() bool { return len(t.prefixes) > 0 }

func (t *trustedProxies) contains(remoteAddr string) bool {
	if len(t.prefixes) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return false
	}
	addr := ap.Addr().Unmap()
	for _, p := range t.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
