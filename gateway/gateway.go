// Package gateway owns the running service: the listeners (the main port and
// the legacy alias ports), the HTTP router and its middleware chain, the
// immutable snapshot built from each config and its atomic swap on reload,
// the config watcher, the admin endpoints and the process lifecycle. It is
// imported only by cmd. It builds agents, policy and registry values from a
// config but leaves their behaviour to those packages.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/toolsearch"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/gateway/upstreamauth"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

// Options configure a Gateway.
type Options struct {
	ConfigPath string
	// Listen overrides the config's listen address (the --listen flag).
	Listen string
	// AliasPortOffset is added to every legacy alias port (agents' port,
	// registry_port; --alias-port-offset); NoAliasPorts binds none of them
	// (--no-alias-ports). Default 0 and false: the config's ports.
	AliasPortOffset int
	NoAliasPorts    bool
	// Agent, when set (serve --agent), serves only that agent and the
	// agents it runs.
	Agent   string
	Logger  *zap.Logger
	Version string
	Commit  string
	// TraceExporter, when set, turns tracing on whatever the config's
	// tracing.endpoint, exporting every span to it as it ends (tests).
	TraceExporter sdktrace.SpanExporter
}

// Gateway is one running pallasgw process.
type Gateway struct {
	opts    Options
	log     *zap.Logger
	metrics *metrics.Metrics

	current  atomic.Pointer[Snapshot]
	draining atomic.Bool // new calls refused (drain_delay after unready)
	unready  atomic.Bool // /readyz 503: Shutdown has begun
	// endDelay, closed by EndDrainDelay, cuts drain_delay short; now,
	// closed by StopNow, cuts the whole shutdown short.
	endDelay     chan struct{}
	endDelayOnce sync.Once
	now          chan struct{}
	nowOnce      sync.Once
	calls        *callCounter // running agent requests

	reloadMu   sync.Mutex // serialises reloads
	lastReload atomic.Pointer[reloadStatus]
	reloads    reloadRing // recent results, for /-/status

	listeners   *listenerSet
	downstreams *mcpclient.Cache         // shared across snapshots
	pins        *pins.Guard              // shared across snapshots: what lists showed survives a reload
	callerReqs  *endpoint.CallerRequests // shared across snapshots
	exchanger   *policy.Exchanger        // shared across snapshots: exchanged tokens survive a reload
	// upstream keeps callers' own upstream tokens (upstream.go); nil
	// until a config has oauth. Shared across snapshots.
	upstream        atomic.Pointer[upstreamauth.Manager]
	upstreamHandler atomic.Pointer[http.Handler]
	vectors         toolsearch.VectorSpaces // shared across snapshots: tool search's embeddings survive a reload
	quotaStores     quotaStores             // shared across snapshots: counters survive a reload
	// sessions is the shared session store (sessions.store), nil for
	// memory; read at start, like listen.
	sessions     sessions.Store
	stopSessions context.CancelFunc // ends the store's subscriptions
	main         *http.Server
	mainLn       net.Listener

	// baseCtx is the parent of every request context; canceling it ends
	// running calls when shutdown_timeout expires.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	wg        sync.WaitGroup // goroutines owned by the gateway (watcher, servers, preflight)
	stopWatch context.CancelFunc
	// failedRefs are the files the last reload's config named when that
	// reload failed (nil otherwise), loadedHash the content hash of the
	// files followed as of the last load, rearm a reload's wake-up of the
	// watch loop (watch.go).
	failedRefs atomic.Pointer[config.Refs]
	loadedHash atomic.Pointer[[32]byte]
	rearm      chan struct{}
}

// reloadStatus is the outcome of the last load attempt.
type reloadStatus struct {
	At         time.Time `json:"at"`
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
	Trigger    string    `json:"trigger,omitempty"`     // start, file, poll, sighup, api
	ConfigHash string    `json:"config_hash,omitempty"` // the config serving after it
}

// New loads the config for the first time and builds the first snapshot.
// A bad first config is an error (the caller exits 1).
func New(opts Options) (*Gateway, error) {
	if err := checkKinds(); err != nil {
		return nil, err
	}
	g := &Gateway{opts: opts, log: opts.Logger, metrics: metrics.New(opts.Version), calls: newCallCounter(), endDelay: make(chan struct{}), now: make(chan struct{}), rearm: make(chan struct{}, 1)}
	g.baseCtx, g.cancelBase = context.WithCancel(context.Background())
	g.listeners = newListenerSet(g)
	g.pins = pins.NewGuard(opts.Logger.Named("pins").WithOptions(zap.WithCaller(false)), g.metrics)
	g.callerReqs = endpoint.NewCallerRequests()
	g.exchanger = &policy.Exchanger{Observe: func(server, outcome string) { g.metrics.TokenExchanges.WithLabelValues(server, outcome).Inc() }}
	cfg, err := LoadConfig(opts.ConfigPath)
	if err != nil {
		return nil, err
	}
	// Every line of the process names the project (SPEC §3: name is the
	// log prefix); a reload that renames it takes effect at the next start.
	g.log = opts.Logger.With(zap.String("project", cfg.Name))
	if opts.Listen != "" {
		cfg.Listen = opts.Listen
	}
	if err := opts.moveAliasPorts(cfg); err != nil {
		return nil, err
	}
	// The wire switch is read at start, like listen: a reload that
	// changes it is told a restart is needed (reload.go).
	wire.SetFast(cfg.Wire.Fast)
	if err := g.openSessions(cfg); err != nil {
		return nil, err
	}
	g.downstreams = g.newDownstreamCache()
	if err := g.apply(cfg, "start"); err != nil {
		g.listeners.closeAll()
		g.closeUpstream()
		g.closeSessions()
		return nil, err
	}
	g.noteReload(nil)
	return g, nil
}

// LoadConfig loads and validates a config with every check the gateway
// applies, including the policy rules config itself cannot know. validate
// and serve share it, so they report the same messages.
func LoadConfig(path string) (*config.Config, error) {
	return config.Load(path, policyChecks)
}

// ParseConfig is LoadConfig for bytes that would be read from path (which
// names the file in errors and anchors its relative paths).
func ParseConfig(path string, raw []byte) (*config.Config, error) {
	return config.Parse(path, raw, policyChecks)
}

// Logger is the gateway's logger: the one it was given, naming the project.
func (g *Gateway) Logger() *zap.Logger { return g.log }

// Metrics exposes the gateway's metrics (tests, benchmarks).
func (g *Gateway) Metrics() *metrics.Metrics { return g.metrics }

// Addr is the main listener's address once Serve has bound it.
func (g *Gateway) Addr() net.Addr {
	if g.mainLn == nil {
		return nil
	}
	return g.mainLn.Addr()
}

// Listen binds the main port.
func (g *Gateway) Listen() error {
	addr := g.current.Load().cfg.Listen
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	g.mainLn = ln
	g.main = g.newServer(g.router())
	return nil
}

// Serve runs the main port until Shutdown. It returns nil after a clean
// shutdown.
func (g *Gateway) Serve() error {
	if g.mainLn == nil {
		if err := g.Listen(); err != nil {
			return err
		}
	}
	s := g.current.Load()
	g.log.Info("serving", zap.String("listen", g.mainLn.Addr().String()), zap.String("config_hash", s.cfg.Hash),
		zap.Int("agents", len(s.cfg.Agents)), zap.Strings("legacy_ports", g.listeners.addrs()),
		zap.Bool("wire_fast", wire.Fast())) // wire.fast: false or PALLASGW_WIRE_FAST=off: every request through mcp-go
	if err := g.main.Serve(g.mainLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (g *Gateway) newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return g.baseCtx },
		ErrorLog:          zap.NewStdLog(g.log.Named("http")),
	}
}

// Shutdown drains: /readyz turns 503 at once, new agent calls are still
// served for drain_delay (a load balancer that cannot retry a refused POST
// has stopped sending by then: its health checks saw the 503) unless
// EndDrainDelay cuts it short, then refused with 503 while the listeners
// still accept; running calls get shutdown_timeout to finish and are then
// canceled, the listeners close, and the snapshot's resources (stdio
// downstreams) are released. StopNow cuts every wait short.
func (g *Gateway) Shutdown() {
	g.unready.Store(true)
	cfg := g.current.Load().cfg
	if cfg.DrainDelay > 0 {
		g.log.Info("not ready; serving for drain_delay", zap.Duration("drain_delay", cfg.DrainDelay))
		t := time.NewTimer(cfg.DrainDelay)
		select {
		case <-t.C:
		case <-g.endDelay:
			t.Stop()
		}
	}
	g.draining.Store(true)
	timeout := cfg.ShutdownTimeout
	g.log.Info("draining", zap.Duration("shutdown_timeout", timeout), zap.Int("running_calls", g.calls.count()))
	if !g.calls.waitZero(timeout, g.now) {
		select {
		case <-g.now:
			g.log.Warn("stopping now; canceling running calls", zap.Int("running_calls", g.calls.count()))
		default:
			g.log.Warn("shutdown_timeout reached; canceling running calls", zap.Int("running_calls", g.calls.count()))
		}
		g.cancelBase()
		g.calls.waitZero(5*time.Second, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { // StopNow: the listeners close without waiting for idle connections
		select {
		case <-g.now:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for _, srv := range append(g.listeners.servers(), g.main) {
		if srv == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
		}()
	}
	wg.Wait()
	g.callerReqs.CancelParked()
	g.cancelBase()
	g.stopWatcher()
	g.wg.Wait()
	g.listeners.closeAll()
	last := g.current.Load()
	last.shutdownTraces() // before exit: the last spans leave now
	last.retire()
	g.quotaStores.close()
	g.closeUpstream()
	g.closeSessions()
	g.log.Info("stopped")
}

// StopNow makes a Shutdown (running or to come) finish at once: no drain
// delay, running calls canceled instead of awaited, listeners closed (a
// second SIGTERM or Ctrl-C while the first one's shutdown runs). Safe to
// call any number of times.
func (g *Gateway) StopNow() {
	g.EndDrainDelay()
	g.nowOnce.Do(func() { close(g.now) })
}

// EndDrainDelay ends a Shutdown's drain_delay now (StopNow; a test with no
// load balancer to drain from): new calls are refused from then on, and
// running calls still get shutdown_timeout. Safe to call any number of
// times, before or during Shutdown.
func (g *Gateway) EndDrainDelay() {
	g.endDelayOnce.Do(func() { close(g.endDelay) })
}

// callCounter counts running agent requests for the drain.
type callCounter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n == 0
}

func newCallCounter() *callCounter {
	c := &callCounter{zero: make(chan struct{})}
	close(c.zero)
	return c
}

func (c *callCounter) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n++
}

func (c *callCounter) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.zero)
	}
}

func (c *callCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// waitZero waits until no call runs; false when timeout passed or stop
// closed first (a nil stop never does).
func (c *callCounter) waitZero(timeout time.Duration, stop <-chan struct{}) bool {
	c.mu.Lock()
	zero := c.zero
	c.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-zero:
		return true
	case <-t.C:
		return false
	case <-stop:
		return false
	}
}
