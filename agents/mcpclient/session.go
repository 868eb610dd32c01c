package mcpclient

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// session is one downstream MCP session for one header fingerprint (or the
// one stdio process of a server). It connects lazily and is replaced in
// place when lost. refs, lastUsed and pooled are guarded by srv.mu.
type session struct {
	srv *remote
	key string
	hdr http.Header // canonical outbound headers, owned; never logged
	// auth is the Authorization of a CallerAuth server's principal
	// session (callerauth.go), set per call; never logged.
	auth atomic.Pointer[http.Header]

	refs     int
	lastUsed time.Time
	pooled   bool

	conn   chan struct{} // one-slot lock serialising connect, replace and shutdown
	cli    *client.Client
	proc   *stdioProc // stdio only: the running process of cli
	closed bool
	// lastProc is the process of the last client connected (stdio
	// only), read without the lock by a call that lost it (exitNote).
	lastProc atomic.Pointer[procOf]

	tools toolCache
	wire  atomic.Pointer[wireInfo] // Streamable HTTP: what a raw call sends (raw.go); set by connect
	// rawRequest and rawDebug are serverRequest and debugCall as the
	// functions each raw call's client takes, made once (rawstream.go).
	rawRequest func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error)
	rawDebug   func(msg string, err error)
	// streamTooLarge is set when a message on one of the session's
	// long-lived streams passed the bound (bound.go), which ended the
	// stream: the next call that fails says why.
	streamTooLarge atomic.Pointer[tooLargeError]

	// shared is the store key of a caller's session that replicas share
	// (shared.go), "" for one this replica keeps to itself: closing the
	// client of a shared one does not end the downstream session.
	shared string
	lost   string                                 // guarded by conn: the shared session id last retired, not adopted again
	caps   atomic.Pointer[mcp.ServerCapabilities] // an adopted session's, which its client was never told

	// What the session's mcp-go transports share, made once (trOnce): the
	// logger (slog) and the HTTP client (httpClient).
	trOnce   sync.Once
	trLog    *slog.Logger
	trClient *http.Client

	logMu    sync.Mutex       // serialises logging/setLevel on this session
	logLevel mcp.LoggingLevel // guarded by logMu; the last level asked for, sent again on reconnect
}

func newSession(srv *remote, key string, hdr http.Header) *session {
	s := &session{srv: srv, key: key, hdr: hdr, conn: make(chan struct{}, 1)}
	s.rawRequest, s.rawDebug = s.serverRequest, s.debugCall // made once, handed to each raw call (rawstream.go)
	return s
}

// lock takes the connection lock unless ctx ends first: a caller must not
// wait past its deadline for another caller's slow connect.
func (s *session) lock(ctx context.Context) error {
	select {
	case s.conn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *session) unlock() { <-s.conn }

// client returns the connected client, connecting first if needed. A stdio
// process that has exited since the last call is restarted here.
func (s *session) client(ctx context.Context) (*client.Client, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	if s.closed {
		return nil, errClosed
	}
	if s.cli != nil && s.proc != nil && s.proc.exited() {
		s.srv.m.log.Warn("downstream process exited, restarting", zap.String(fieldServer, s.srv.spec.Name))
		s.retireLocked()
	}
	if s.cli != nil {
		return s.cli, nil
	}
	return s.connectLocked(ctx)
}

// replace drops old (if it is still current) and connects anew: the
// reconnect after a lost session.
func (s *session) replace(ctx context.Context, old *client.Client) (*client.Client, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	if s.closed {
		return nil, errClosed
	}
	if s.cli == old {
		s.retireLocked()
	}
	if s.cli != nil {
		return s.cli, nil // another caller reconnected already
	}
	return s.connectLocked(ctx)
}

// drop retires old if it is still current, without reconnecting. If ctx
// ends first it does nothing: whoever holds the lock is replacing old.
func (s *session) drop(ctx context.Context, old *client.Client) {
	if s.lock(ctx) != nil {
		return
	}
	defer s.unlock()
	if s.cli == old && old != nil {
		s.retireLocked()
	}
}

// shutdown closes the session for good. It blocks until the client is
// closed (for stdio: the process has exited or been killed).
func (s *session) shutdown() {
	_ = s.lock(context.Background())
	defer s.unlock()
	first := !s.closed
	s.closed = true
	cli, proc := s.cli, s.proc
	s.cli, s.proc = nil, nil
	closeClient(s, cli, proc)
	if first {
		s.srv.shutDown() // pool.go: no longer open
	}
}

// retireLocked closes the current client in the background.
func (s *session) retireLocked() {
	cli, proc := s.cli, s.proc
	s.cli, s.proc = nil, nil
	s.tools.invalidate()
	if cli != nil && s.shared != "" {
		s.lost = sessionIDOf(cli.GetTransport())
	}
	if cli != nil {
		s.srv.m.spawn(func() { closeClient(s, cli, proc) })
	}
}

func closeClient(s *session, cli *client.Client, proc *stdioProc) {
	if cli == nil {
		return
	}
	if err := cli.Close(); err != nil {
		s.srv.m.log.Debug("closing downstream client", zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
	}
	if proc != nil {
		proc.release()
	}
}

// connectLocked creates, starts and initializes a client. Any failure is
// reported as ErrUnavailable, unless ctx ended.
func (s *session) connectLocked(ctx context.Context) (*client.Client, error) {
	start := time.Now()
	var rec *sharedRecord // another replica's session of this caller, to adopt (shared.go)
	if s.shared != "" {
		var err error
		if rec, err = s.adoptable(ctx); err != nil {
			return nil, fmt.Errorf("connecting: %w", err)
		}
	}
	s.caps.Store(nil)
	cli, proc, err := s.newClient(rec)
	if err == nil {
		err = s.start(ctx, cli)
		if proc != nil {
			proc.started()
		}
	}
	var version string
	switch {
	case err == nil && rec != nil:
		version = rec.Version
		cli.GetTransport().(*transport.StreamableHTTP).SetProtocolVersion(version)
		s.caps.Store(&rec.Caps)
		s.adopted()
	case err == nil:
		version, err = s.initialize(ctx, cli)
		if err == nil && s.shared != "" {
			s.record(ctx, cli, version)
		}
	}
	if err == nil {
		s.resendLevel(ctx, cli)
	}
	if err != nil {
		if s.streamTooLarge.Load() == nil { // a line past the bound ended stdout, not the process
			err = proc.exitNote(ctx, err) // a process that exited says how
		}
		closeOnFailure(s, cli, proc)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connecting: %w", ctx.Err())
		}
		return nil, fmt.Errorf("connecting: %w: %w", ErrUnavailable, err)
	}
	s.cli, s.proc = cli, proc
	if proc != nil {
		s.lastProc.Store(&procOf{cli: cli, proc: proc})
	}
	s.noteWire(cli, version)
	s.srv.m.log.Info("downstream connected", zap.String(fieldServer, s.srv.spec.Name), zap.String("transport", s.srv.spec.Transport),
		zap.String("protocol_version", version), zap.Int("headers", len(s.hdr)),
		zap.Int64("duration_ms", time.Since(start).Milliseconds()))
	return cli, nil
}

// procOf is a stdio client and its process.
type procOf struct {
	cli  *client.Client
	proc *stdioProc
}

// exitNote is the process's exitNote when err is a failure of cli, a
// stdio client whose process it lost.
func (s *session) exitNote(ctx context.Context, cli *client.Client, err error) error {
	if p := s.lastProc.Load(); p != nil && p.cli == cli && err != nil {
		return p.proc.exitNote(ctx, err)
	}
	return err
}

func closeOnFailure(s *session, cli *client.Client, proc *stdioProc) {
	if cli != nil {
		s.srv.m.spawn(func() { closeClient(s, cli, proc) })
	} else if proc != nil {
		proc.release()
	}
}

// newClient builds the mcp-go client for the server's transport.
func (s *session) newClient(rec *sharedRecord) (*client.Client, *stdioProc, error) {
	var (
		tr   transport.Interface
		proc *stdioProc
		err  error
	)
	switch s.srv.spec.Transport {
	case TransportHTTP:
		tr, err = s.newStreamable(rec)
	case TransportSSE:
		tr, err = s.newSSE()
	case TransportStdio:
		tr, proc, err = s.newStdio()
	default:
		err = fmt.Errorf("unknown transport %q", s.srv.spec.Transport)
	}
	if err != nil {
		return nil, nil, err
	}
	// Elicitation and sampling are served by relaying them to a proxy
	// agent's caller during a call (see Relay). Roots are not declared: they
	// describe one client, while the session is shared by every caller with
	// the same outbound headers, and servers ask for them outside any call
	// (after initialize, on roots/list_changed), when there is no caller to
	// ask. A server that asks during a call anyway gets the caller's roots.
	opts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
		client.WithClientCapabilities(mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}},
			Sampling:    &mcp.SamplingCapability{},
		})}
	if rec != nil {
		opts = append(opts, client.WithSession()) // initialized by the replica that opened it
	}
	cli := client.NewClient(tr, opts...)
	cli.OnNotification(s.onNotification)
	// Only the SSE transport reports a lost stream; its pending and future
	// requests would otherwise wait for their timeouts.
	cli.OnConnectionLost(func(err error) {
		s.srv.m.log.Info("downstream stream lost", zap.String(fieldServer, s.srv.spec.Name), zap.Error(s.scrub(err)))
		s.srv.m.spawn(func() { s.drop(s.srv.m.ctx, cli) })
	})
	return cli, proc, nil
}

// httpClient is the session's view of the server's shared transport: it
// adds the session's headers to requests that lack them, which covers the
// DELETE mcp-go sends on Close without its header options. One client
// serves all the session's transports, relayed's per-call ones among them.
func (s *session) httpClient() *http.Client {
	s.transportsShared()
	return s.trClient
}

// slog is the logger of mcp-go's transport for this session: the
// Manager's, with the session's header values and its server's secrets
// taken out, and its repeated warnings thinned (zapHandler), one for all the
// session's transports.
func (s *session) slog() *slog.Logger {
	s.transportsShared()
	return s.trLog
}

// transportsShared makes what the session's transports share, once. The
// session's shared key is set by then (newSessionLocked).
func (s *session) transportsShared() {
	s.trOnce.Do(func() {
		s.trLog = slog.New(&zapHandler{log: s.srv.m.log, hs: []http.Header{s.hdr, s.srv.secrets}, auth: &s.auth, rep: newRepeats()})
		s.trClient = &http.Client{Transport: &headerRoundTripper{base: s.srv.transport, hdr: s.hdr, auth: &s.auth, limit: s.srv.m.opts.MaxMessageBytes,
			stream: &s.streamTooLarge, keep: s.shared != ""}, CheckRedirect: noRedirects}
	})
}

// scrub is scrub.go's scrub with the session's headers and its server's
// secrets.
func (s *session) scrub(err error) error {
	return scrub(err, s.hdr, s.srv.secrets, authHeader(&s.auth))
}

func (s *session) newStreamable(rec *sharedRecord) (transport.Interface, error) {
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPBasicClient(s.httpClient()),
		transport.WithHTTPHeaders(flatten(s.hdr)),
		transport.WithHTTPLogger(s.slog()),
	}
	if rec != nil {
		// Another replica's session (shared.go), whose GET stream that
		// replica keeps.
		opts = append(opts, transport.WithSession(rec.ID))
	} else {
		// The GET stream carries notifications/tools/list_changed while
		// no call is in flight; it keeps the connection on a legacy
		// revision, which we pin anyway.
		opts = append(opts, transport.WithContinuousListening())
	}
	return transport.NewStreamableHTTP(s.srv.spec.URL, opts...)
}

// serverCaps is what the server declared for the session of cli.
func (s *session) serverCaps(cli *client.Client) mcp.ServerCapabilities {
	if c := s.caps.Load(); c != nil {
		return *c
	}
	return cli.GetServerCapabilities()
}

func (s *session) newSSE() (transport.Interface, error) {
	return transport.NewSSE(s.srv.spec.URL,
		transport.WithHTTPClient(s.httpClient()),
		transport.WithHeaders(flatten(s.hdr)),
		transport.WithResponseTimeout(s.srv.spec.Timeout),
		transport.WithEndpointTimeout(s.srv.spec.Timeout),
		transport.WithSSELogger(s.slog()),
	)
}

// start starts cli's transport. Long-lived streams (the SSE stream, the GET
// listener) are tied to the Manager's context, not the caller's, so the
// start is raced against ctx separately; losing the race closes the client.
func (s *session) start(ctx context.Context, cli *client.Client) error {
	errc := make(chan error, 1)
	go func() { errc <- cli.Start(s.srv.m.ctx) }()
	select {
	case err := <-errc:
		if bidi, ok := cli.GetTransport().(transport.BidirectionalInterface); ok && err == nil {
			bidi.SetRequestHandler(s.serverRequest) // after Start, which installs mcp-go's
		}
		return err
	case <-ctx.Done():
		_ = cli.Close()
		<-errc
		return ctx.Err()
	}
}

// initialize runs the handshake and returns the protocol version the server
// chose.
func (s *session) initialize(ctx context.Context, cli *client.Client) (string, error) {
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: s.srv.m.opts.ClientName, Version: s.srv.m.opts.ClientVersion}
	res, err := cli.Initialize(ctx, req)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", plainSend(err))
	}
	return res.ProtocolVersion, nil
}

// onNotification demultiplexes the notifications of one client: progress by
// token to the call that asked for it, list changes to the tool cache, log
// messages to the Options hook (a call that relays its own takes them
// first: relayed, callNotification).
func (s *session) onNotification(n mcp.JSONRPCNotification) {
	switch mcp.MCPMethod(n.Method) {
	case mcp.MethodNotificationProgress:
		s.srv.m.progress.deliver(n.Params.AdditionalFields)
	case mcp.MethodNotificationToolsListChanged:
		s.srv.invalidateTools()
	case mcp.MethodNotificationMessage:
		if hook := s.srv.m.opts.OnLogMessage; hook != nil {
			f := n.Params.AdditionalFields
			level, _ := f["level"].(string)
			logger, _ := f["logger"].(string)
			hook(s.srv.spec.Name, level, logger, f["data"])
		}
	}
}

// headerRoundTripper sets hdr on requests that do not carry those names
// and bounds the bodies of their answers (bound.go).
type headerRoundTripper struct {
	base   http.RoundTripper
	hdr    http.Header
	auth   *atomic.Pointer[http.Header]   // the session's Authorization (callerauth.go), set on every request
	limit  int                            // of one message (bound.go)
	stream *atomic.Pointer[tooLargeError] // the session's streamTooLarge
	keep   bool                           // a shared session: no DELETE (shared.go)
}

func (rt *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && rt.keep {
		return keptOpen(req), nil // a shared session is the server's to expire
	}
	resp, err := rt.roundTrip(req)
	if err == nil {
		wire.BoundBody(resp, rt.limit, tooLargeNoteOf(req.Context(), rt.stream))
	}
	return resp, err
}

func (rt *headerRoundTripper) roundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Header["Traceparent"]; !ok && tracing.Active(req.Context()) {
		// mcp-go's request of a traced call: the call span's context.
		req = req.Clone(req.Context())
		tracing.Inject(req.Context(), req.Header)
	}
	if auth := callOf(req.Context()).auth; auth != "" { // the call's own token (callerauth.go)
		if req.Header.Get("Authorization") != auth {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", auth)
		}
	} else if a := authHeader(rt.auth); a != nil && req.Header.Get("Authorization") != a.Get("Authorization") {
		req = req.Clone(req.Context())
		req.Header["Authorization"] = a["Authorization"]
	}
	missing := false
	for name := range rt.hdr {
		if _, ok := req.Header[name]; !ok {
			missing = true
			break
		}
	}
	if !missing {
		return rt.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for name, vals := range rt.hdr {
		if _, ok := req.Header[name]; !ok {
			req.Header[name] = vals
		}
	}
	return rt.base.RoundTrip(req)
}

// toolCache is a session's cached tools/list result. gen changes on every
// invalidation, so a listing that raced with a tools/list_changed is not
// stored.
type toolCache struct {
	mu         sync.Mutex
	gen        uint64
	tools      []mcp.Tool
	ok         bool
	at         time.Time // when tools were read
	refreshing bool      // a background read is running (refresh)
}

// get returns the cached list, its generation, whether there is one, and
// whether it is older than ttl (stale: serve it, and read it again).
func (c *toolCache) get(ttl time.Duration) (tools []mcp.Tool, gen uint64, ok, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools, c.gen, c.ok, c.ok && time.Since(c.at) > ttl
}

func (c *toolCache) put(gen uint64, tools []mcp.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.tools, c.ok, c.at = tools, true, time.Now()
	}
}

// refresh marks a background read of generation gen as started; false
// when one is running already or the cache has moved on.
func (c *toolCache) refresh(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshing || c.gen != gen || !c.ok {
		return false
	}
	c.refreshing = true
	return true
}

// refreshed ends a background read of generation gen: its list, or on
// failure the cache dropped, so that the next caller reads the list itself
// and meets the failure (a server gone is no longer listed).
func (c *toolCache) refreshed(gen uint64, tools []mcp.Tool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if c.gen != gen {
		return
	}
	if err != nil {
		c.gen++
		c.tools, c.ok = nil, false
		return
	}
	c.tools, c.at = tools, time.Now()
}

func (c *toolCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.tools, c.ok = nil, false
}
