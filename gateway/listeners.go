package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// listenerSet owns the legacy alias ports (agents' port and registry_port).
// A reload binds the new ports before the snapshot swap and closes removed
// ones after it, so a port that cannot be bound fails the reload while the
// old ports keep serving.
type listenerSet struct {
	g      *Gateway
	mu     sync.Mutex
	byPort map[int]*legacyListener
}

type legacyListener struct {
	port    int
	ln      net.Listener
	srv     *http.Server
	closing atomic.Bool // the port was removed: its listener is closed on purpose
}

func newListenerSet(g *Gateway) *listenerSet {
	return &listenerSet{g: g, byPort: map[int]*legacyListener{}}
}

// bind opens the ports of want that are not open yet. On error it closes
// what it opened and reports the port.
func (l *listenerSet) bind(bindHost string, want map[int]portRole) ([]*legacyListener, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var added []*legacyListener
	for _, port := range sortedPorts(want) {
		if l.byPort[port] != nil {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(bindHost, strconv.Itoa(port)))
		if err != nil {
			for _, a := range added {
				a.ln.Close()
			}
			return nil, &bindError{port: port, err: err}
		}
		added = append(added, &legacyListener{port: port, ln: ln, srv: l.g.newServer(l.g.legacyHandler(port))})
	}
	return added, nil
}

// bindError is a legacy port that could not be bound.
type bindError struct {
	port int
	err  error
}

func (e *bindError) Error() string { return fmt.Sprintf("binding legacy port %d: %v", e.port, e.err) }
func (e *bindError) Unwrap() error { return e.err }

// commit starts serving the newly bound ports and closes the ones the new
// snapshot no longer has, letting their running requests finish.
func (l *listenerSet) commit(added []*legacyListener, want map[int]portRole) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range added {
		l.byPort[a.port] = a
		l.g.wg.Add(1)
		go func() {
			defer l.g.wg.Done()
			if err := a.srv.Serve(a.ln); err != nil && err != http.ErrServerClosed && !a.closing.Load() {
				l.g.log.Error("legacy port stopped", zap.Int("port", a.port), zap.Error(err))
			}
		}()
	}
	for port, old := range l.byPort {
		if _, keep := want[port]; keep {
			continue
		}
		delete(l.byPort, port)
		// The port is free when the reload returns, so that the next one
		// may bind it again; running requests finish in the background.
		old.closing.Store(true)
		old.ln.Close()
		l.g.wg.Add(1)
		go func() {
			defer l.g.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), l.g.current.Load().cfg.ShutdownTimeout)
			defer cancel()
			if err := old.srv.Shutdown(ctx); err != nil {
				old.srv.Close()
			}
		}()
	}
}

func (l *listenerSet) servers() []*http.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*http.Server
	for _, x := range l.byPort {
		out = append(out, x.srv)
	}
	return out
}

func (l *listenerSet) addrs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, port := range sortedPorts(l.byPort) {
		out = append(out, l.byPort[port].ln.Addr().String())
	}
	return out
}

func (l *listenerSet) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for port, x := range l.byPort {
		x.srv.Close()
		x.ln.Close()
		delete(l.byPort, port)
	}
}

func sortedPorts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// legacyHandler serves one legacy port: /mcp (and its /mcp/server-card)
// for an agent's port, the registry for registry_port. What the port serves is read from the
// snapshot of each request, so a reload can move an agent between ports.
func (g *Gateway) legacyHandler(port int) http.Handler {
	agent := g.browserChain("legacy_agent", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := g.acquire()
		defer s.release()
		g.serveAgent(w, r, s, s.ports[port].agent)
	}))
	reg := g.browserChain("registry", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := g.acquire()
		defer s.release()
		g.registryLegacy(w, r, s)
	}))
	card := g.publicChain("registry", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := g.acquire()
		defer s.release()
		g.serverCardLegacy(w, r, s, port)
	}))
	notFound := g.requestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, agents.RequestID(r.Context()), "no route for "+quoteClipped(r.URL.Path)+" on legacy port "+strconv.Itoa(port))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		role := g.current.Load().ports[port]
		switch {
		case (r.URL.Path == "/mcp" || r.URL.Path == "/mcp/") && role.agent != "":
			agent.ServeHTTP(w, r)
		case r.URL.Path == "/mcp/server-card" && role.agent != "":
			card.ServeHTTP(w, r)
		case r.URL.Path == "/.well-known/mcp/server.json" && role.registry && r.Method == http.MethodGet:
			reg.ServeHTTP(w, r)
		default:
			notFound.ServeHTTP(w, r)
		}
	})
}

// registryLegacy advertises agents with a legacy port at that port, so old
// clients stay on old ports, and the others on the main port.
func (g *Gateway) registryLegacy(w http.ResponseWriter, r *http.Request, s *Snapshot) {
	host := s.legacyHost(r)
	main := "http://" + host + ":" + s.mainPort()
	if s.cfg.PublicURL != "" {
		main = s.baseURL(r)
	}
	writeRegistry(w, s.registry.JSON(func(agent string, port int) string {
		if port != 0 {
			return "http://" + host + ":" + strconv.Itoa(port) + "/mcp"
		}
		return main + "/agents/" + agent + "/mcp"
	}))
}

// moveAliasPorts applies the serve flags that move the legacy alias ports
// to a loaded config, as --listen moves the main port: each agent's port
// and registry_port shifted by AliasPortOffset, or all of them off with
// NoAliasPorts (a second gateway on one machine, a port taken). A shifted
// port out of range or on another listener's port is an error at its key.
func (o Options) moveAliasPorts(cfg *config.Config) error {
	if o.NoAliasPorts {
		cfg.RegistryPort = 0
		for _, a := range cfg.Agents {
			a.Port = 0
		}
		return nil
	}
	if o.AliasPortOffset == 0 {
		return nil
	}
	owner := map[int]string{}
	if _, p, err := net.SplitHostPort(cfg.Listen); err == nil {
		if n, err := strconv.Atoi(p); err == nil && n > 0 {
			owner[n] = "listen"
		}
	}
	move := func(port *int, who string, key []string) error {
		if *port == 0 {
			return nil
		}
		moved := *port + o.AliasPortOffset
		if moved < 1 || moved > 65535 {
			return cfg.ErrorAt(key, fmt.Sprintf("port %d moved by --alias-port-offset %d is %d, out of range 1-65535", *port, o.AliasPortOffset, moved))
		}
		if prev, ok := owner[moved]; ok {
			return cfg.ErrorAt(key, fmt.Sprintf("port %d moved by --alias-port-offset %d is %d, already used by %s", *port, o.AliasPortOffset, moved, prev))
		}
		owner[moved], *port = who, moved
		return nil
	}
	if err := move(&cfg.RegistryPort, "registry_port", []string{"registry_port"}); err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.Agents))
	for name := range cfg.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := move(&cfg.Agents[name].Port, "agent "+name, []string{"agents", name, "port"}); err != nil {
			return err
		}
	}
	return nil
}
