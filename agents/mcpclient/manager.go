// Package mcpclient owns the gateway's clients to downstream MCP servers
// (Streamable HTTP, legacy SSE and stdio), built on mcp-go's client.
//
// It owns: the pool of downstream sessions (per server and per set of
// outbound headers, and per caller or per call as the server's scope says:
// scope.go), stdio processes, per-call timeouts, reconnection, progress
// and log demultiplexing, the relay of a call's server-to-client requests to
// its caller (relay.go), the cancellation of calls downstream (cancel.go),
// tool-list caching, the raw tools/call that returns a result as the
// downstream sent it (raw.go, rawstream.go) over each server's net/http
// Transport (pool.go), the downstream metrics, and the one downstream the
// agents call: a snapshot's view over per-server managers kept warm across
// reloads, each tool call checked by the pins' guard first (view.go).
//
// It must not decide which headers leave the gateway: the caller (the agent
// runtime, which consults policy) computes the outbound header set per request
// and this package sends exactly that set plus the protocol's own headers. It
// never shares a session between two header sets, and it never logs header
// values. It imports no project package but metrics, tracing, wire (the
// bytes of its raw calls) and pins (the guard of view.go).
//
// Protocol version: every client pins the session-based revision
// mcp.LATEST_LEGACY_PROTOCOL_VERSION (2025-11-25) through initialize; a server
// that only knows 2025-06-18 or 2025-03-26 answers with that and mcp-go accepts
// it. The sessionless 2026-07-28 default is not used because (1) pooling is per
// credential anyway, so sessions cost nothing extra; (2) the continuous GET
// stream, needed to hear notifications/tools/list_changed while idle, only
// exists in the legacy revisions (mcp-go forces legacy when it is enabled);
// (3) the default negotiation first sends server/discover, which the
// TypeScript SDK's stateful server (server-everything) answers with HTTP 400
// "Server not initialized" and mcp-go then falls back: an extra round trip per
// session, and over stdio a server that ignores the unknown method would stall
// the handshake for the 5 s discover timeout.
package mcpclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/metrics"
)

// Transport names accepted in ServerSpec.Transport.
const (
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	TransportStdio = "stdio"
)

// Defaults applied by NewManager to zero-valued fields.
const (
	DefaultTimeout              = 60 * time.Second
	DefaultMaxSessionsPerServer = 64
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultClientName           = "pallasgw"
	DefaultClientVersion        = "dev"
	// DefaultMaxMessageBytes bounds one message a downstream sends (a JSON
	// body, an SSE event, a stdio line): 64 MiB.
	DefaultMaxMessageBytes = 64 << 20
	// DefaultToolListTTL is how long a session's tool list is used before
	// it is read again.
	DefaultToolListTTL = 30 * time.Second
)

// Log field keys of this package.
const (
	fieldComponent = "component"
	fieldServer    = "server"
	fieldOp        = "op"
	fieldError     = "error"
	fieldLine      = "line"
	// fieldRepeated counts the repeats of a warning written at Debug
	// since it was last written at its level (zapslog.go).
	fieldRepeated = "repeated"
)

// ErrUnavailable means the downstream could not be reached: connecting
// failed, the session was lost twice in a row, or a stdio process failed to
// start. Test with errors.Is.
var ErrUnavailable = errors.New("downstream unavailable")

// ErrUnknownServer is returned for a server name that is not configured.
var ErrUnknownServer = errors.New("unknown downstream server")

// errClosed is returned by every call made after Close.
var errClosed = fmt.Errorf("%w: client manager closed", ErrUnavailable)

// ServerSpec describes one downstream MCP server.
type ServerSpec struct {
	Name      string
	Transport string // "http" (Streamable HTTP) | "sse" | "stdio"; default "http"
	URL       string // http, sse

	Command string            // stdio
	Args    []string          // stdio
	Env     map[string]string // stdio; the child also gets PATH and HOME from the parent, nothing else
	Dir     string            // stdio; default: the gateway's working directory

	Timeout time.Duration // per call, applied through the context; default 60s

	// Scope is whom a session serves (scope.go): ScopeCaller, ScopeCall or
	// ScopeShared (the default).
	Scope string
	// CallerAuth says the server's Authorization is each caller's own
	// credential, renewed while the caller stays (upstream OAuth): its
	// sessions are keyed by Options.PrincipalOf, not by the token
	// (callerauth.go).
	CallerAuth bool
	// MaxSessions caps the server's open sessions (stdio: processes);
	// default Options.MaxSessionsPerServer.
	MaxSessions int

	// Redact are values of the spec to take out of the server's stderr
	// lines and errors (as <redacted>) beside those serverSecrets finds:
	// the values its config took from the environment (${VAR}), a token in
	// Args among them.
	Redact []string
}

// ProgressFunc receives downstream notifications/progress of one call. total
// is nil when the downstream did not send one. It runs on the transport's
// reader goroutine and must not block.
type ProgressFunc func(progress float64, total *float64, message string)

// LogFunc receives notifications/message sent by a downstream server. It runs
// on the transport's reader goroutine and must not block.
type LogFunc func(server string, level string, logger string, data any)

// Options configure a Manager. Zero values take the defaults noted.
type Options struct {
	Logger  *zap.Logger      // default: no logging
	Metrics *metrics.Metrics // default: no metrics

	// MaxSessionsPerServer bounds the pooled sessions per server (the
	// distinct outbound header fingerprints and callers kept open) unless
	// its ServerSpec.MaxSessions says otherwise. Default 64.
	MaxSessionsPerServer int
	// IdleTimeout closes pooled sessions unused for this long. Default 5m.
	// A stdio server's shared process is not closed when idle; its
	// callers' own processes (ScopeCaller) are.
	IdleTimeout time.Duration

	ClientName    string // clientInfo.name; default "pallasgw"
	ClientVersion string // clientInfo.version; default "dev"

	// CallerOf, if set, names the caller of a request's context, whom a
	// ScopeCaller server's session belongs to (scope.go); "" or Anonymous
	// for none.
	CallerOf func(context.Context) string
	// PrincipalOf, if set, names the authenticated principal of a
	// request's context ("" for none), whose own credential a CallerAuth
	// server receives: that server's sessions are keyed by it
	// (callerauth.go). Never a self-asserted name.
	PrincipalOf func(context.Context) string
	// Sessions, if set, is the store replicas share a caller's downstream
	// sessions through (shared.go); nil keeps every session to this
	// replica.
	Sessions SessionStore

	// OnLogMessage, if set, receives downstream logging notifications.
	OnLogMessage LogFunc

	// MaxMessageBytes bounds one message of a downstream, on every path
	// that reads one (mcp-go's client over HTTP, SSE and stdio, the raw
	// calls): a longer one fails its call with an error saying so, and is
	// never held whole (bound.go). Default DefaultMaxMessageBytes.
	MaxMessageBytes int

	// ToolListTTL is how long a session's cached tools/list result is
	// served as it is; past it the cached list is still answered at once,
	// and read again in the background, so that a downstream that changed
	// without telling (redeployed, gone) is seen within about this long
	// (toollist.go). A notifications/tools/list_changed drops the cache at
	// once. Default DefaultToolListTTL.
	ToolListTTL time.Duration

	// ToolFilter, if set, gets every tool list read from a server (the
	// decoded tools and each one's JSON as the server sent it) and returns
	// the list to cache and serve: the gateway's tool pins
	// (agents/pins) hash and check definitions here, once per read.
	ToolFilter func(server string, tools []mcp.Tool, raw []json.RawMessage) []mcp.Tool

	// Guard is the manager's call guard: a tools/call of a tool whose
	// definition awaits approval or was rejected (the gateway's pins) is
	// refused before it goes out (guard.go); nil: every call goes.
	Guard *pins.Guard
}

// processTag names this process in the ids of the requests it sends past
// mcp-go's client ("pgw-call-<tag>-<n>"): replicas that share a caller's
// downstream session (sessions.store) each count from 1, and a server
// refuses a request whose id is already in flight on the session (go-sdk:
// "duplicate in-flight request ID"), as when a replica replays an
// input-required call the replica that asked still waits in.
var processTag = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}()

// requestID is the id of the seq-th request of kind ("call", "task",
// "tools") this process sends past mcp-go's client.
func requestID(kind string, seq uint64) string {
	var b [64]byte // one string made, not two
	id := append(append(b[:0], "pgw-"...), kind...)
	id = append(append(append(id, '-'), processTag...), '-')
	return string(strconv.AppendUint(id, seq, 36))
}

// Manager holds the clients of every configured downstream server. It is
// safe for concurrent use. Build one per config snapshot and Close it when
// the snapshot is retired.
type Manager struct {
	opts     Options
	log      *zap.Logger
	servers  map[string]*remote
	progress progressRouter
	fetches  fetchGroup    // tools/list requests in flight, shared by callers
	listSeq  atomic.Uint64 // ids of the tools/list requests sent past mcp-go's client
	callSeq  atomic.Uint64 // ids of the raw tools/call requests (raw.go); see processTag

	ctx    context.Context // parent of long-lived streams; canceled by Close
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed and wg.Add
	closed bool
	wg     sync.WaitGroup // calls in flight, janitor, stderr readers, background closes
	// ending counts the calls in flight and the notifications/cancelled
	// being sent for them: Close lets them finish (within cancelTimeout)
	// before it ends the sessions, so that a downstream hears a call was
	// cancelled before its session goes (cancel.go).
	ending sync.WaitGroup

	closeOnce sync.Once
}

// NewManager builds a Manager for specs. It connects to nothing: sessions and
// stdio processes start on first use.
func NewManager(specs []ServerSpec, opts Options) *Manager {
	opts = withDefaults(opts)
	log := opts.Logger.With(zap.String(fieldComponent, "downstream"))
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:    opts,
		log:     log,
		servers: make(map[string]*remote, len(specs)),
		ctx:     ctx,
		cancel:  cancel,
	}
	m.progress.calls = make(map[string]*progressSink)
	for _, spec := range specs {
		spec = specWithDefaults(spec)
		m.servers[spec.Name] = newRemote(m, spec)
	}
	m.track(m.janitor)
	return m
}

func withDefaults(o Options) Options {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxSessionsPerServer <= 0 {
		o.MaxSessionsPerServer = DefaultMaxSessionsPerServer
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ClientName == "" {
		o.ClientName = DefaultClientName
	}
	if o.ClientVersion == "" {
		o.ClientVersion = DefaultClientVersion
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.ToolListTTL <= 0 {
		o.ToolListTTL = DefaultToolListTTL
	}
	return o
}

func specWithDefaults(s ServerSpec) ServerSpec {
	if s.Transport == "" {
		s.Transport = TransportHTTP
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Scope == "" {
		s.Scope = ScopeShared
	}
	s.Args = slices.Clone(s.Args)
	return s
}

// Spec returns the spec of server, with defaults applied.
func (m *Manager) Spec(server string) (ServerSpec, bool) {
	srv, ok := m.servers[server]
	if !ok {
		return ServerSpec{}, false
	}
	return srv.spec, true
}

// Servers returns the configured server names, sorted.
func (m *Manager) Servers() []string {
	names := make([]string, 0, len(m.servers))
	for name := range m.servers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Invalidate drops the cached tool lists of server.
func (m *Manager) Invalidate(server string) {
	if srv, ok := m.servers[server]; ok {
		srv.invalidateTools()
	}
}

// Close cancels the calls in flight, closes every session, stops stdio
// processes (killing them after a grace period) and waits for every
// goroutine the Manager started and every call to return. Calls made after
// Close fail with ErrUnavailable.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		m.cancel()
		m.awaitEnding(cancelTimeout + time.Second)
		var wg sync.WaitGroup
		for _, srv := range m.servers {
			for _, s := range srv.drain() {
				wg.Go(s.shutdown)
			}
		}
		wg.Wait()
		m.wg.Wait()
		for _, srv := range m.servers {
			srv.transport.CloseIdleConnections()
		}
	})
	return nil
}

// awaitEnding waits, at most for d, until the calls in flight have ended
// and their notifications/cancelled are sent (ending). Each call ends
// within its server's timeout, so the goroutine that waits exits then.
func (m *Manager) awaitEnding(d time.Duration) {
	done := make(chan struct{})
	go func() {
		m.ending.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		m.log.Warn("closing downstream sessions with calls still ending", zap.Duration("waited", d))
	}
}

// spawn runs the cleanup f on a goroutine that Close waits for; after Close
// it runs f synchronously instead.
func (m *Manager) spawn(f func()) {
	if !m.track(f) {
		f()
	}
}

// track runs f on a goroutine that Close waits for, unless the Manager is
// closed; it reports whether it did.
func (m *Manager) track(f func()) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// begin registers a call, which Close cancels and waits for; end must be
// called when it returns. The call's context also ends after timeout (none
// when 0). After Close it reports false.
func (m *Manager) begin(ctx context.Context, timeout time.Duration) (_ context.Context, end func(), ok bool) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ctx, func() {}, false
	}
	m.wg.Add(1)
	m.ending.Add(1)
	m.mu.Unlock()
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, &timeoutError{timeout: timeout})
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(m.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		m.ending.Done()
		m.wg.Done()
	}, true
}

func (m *Manager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// janitor closes idle pooled sessions until Close.
func (m *Manager) janitor() {
	tick := min(max(m.opts.IdleTimeout/2, 10*time.Millisecond), 30*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case now := <-t.C:
			for _, srv := range m.servers {
				for _, s := range srv.expire(now) {
					m.spawn(s.shutdown)
				}
			}
		}
	}
}

// Outcome classifies err for metrics and logs: "ok", "error", "timeout",
// "canceled" or "unavailable".
func Outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "error"
	}
}

// lookup returns the server named server.
func (m *Manager) lookup(server string) (*remote, error) {
	srv, ok := m.servers[server]
	if !ok {
		return nil, fmt.Errorf("downstream %q: %w", server, ErrUnknownServer)
	}
	return srv, nil
}
