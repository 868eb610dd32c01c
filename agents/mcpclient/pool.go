package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// remote is one configured downstream server: its spec, its shared HTTP transport
// and its pool of sessions keyed by outbound header fingerprint and, under
// ScopeCaller, caller (scope.go). A shared stdio server has at most one
// session, keyed "", whatever the headers; a ScopeCaller one a process per
// caller besides, at most its cap in all.
type remote struct {
	m    *Manager
	spec ServerSpec
	// transport is shared by every session of this server and by its raw
	// calls (raw.go), which set every header themselves and call its
	// RoundTrip directly, as httputil.ReverseProxy does: no redirect is
	// followed (see noRedirects), and http.Client's work per request is
	// saved.
	transport *http.Transport

	secrets http.Header // serverSecrets (scrub.go)

	host string // spec.URL's host name, server.address of its call spans (trace.go); "" for none

	mu   sync.Mutex
	pool map[string]*session // guarded by mu
	live int                 // guarded by mu: sessions created and not yet shut down (pooled, one-shot, closing)
}

func newRemote(m *Manager, spec ServerSpec) *remote {
	return &remote{
		m:         m,
		spec:      spec,
		transport: newHTTPTransport(),
		secrets:   serverSecrets(spec),
		host:      hostOf(spec.URL),
		pool:      make(map[string]*session),
	}
}

// noRedirects makes a client return a redirect as it came: following one
// would take the session's headers, credentials among them, to wherever the
// downstream points (a credential goes only to the server
// configured to receive it). The caller gets the status as an error.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Limits of a server's HTTP transport.
const (
	// maxConnsIdle is the idle pool of a server's transport, sized for 256
	// concurrent calls: a server is one host, and a pool smaller than the
	// calls in flight makes net/http close the surplus connections when a
	// burst ends and dial again on the next one.
	maxConnsIdle    = 256
	idleConnTimeout = 90 * time.Second
	dialTimeout     = 10 * time.Second
	dialKeepAlive   = 30 * time.Second
	tlsTimeout      = 10 * time.Second
)

// newHTTPTransport is the transport of one downstream server, shared by its
// sessions and its raw calls. Each server has its own (rather than one for
// the Manager) so that a busy server's connections cannot take another's
// place in the idle pool, and a server's idle connections close with it.
// It is tuned for many concurrent calls to one host: keep-alive, an idle
// pool per host as large as the calls in flight, and no transparent gzip
// (MCP messages are small; compressing them costs CPU on both ends on every
// call). It has no overall timeout (http.Client.Timeout would cut long
// streamed responses): per-call deadlines come from the calls' contexts.
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxConnsIdle,
		MaxIdleConnsPerHost:   maxConnsIdle,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsTimeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// canonical returns a copy of h with canonical names, merging names that
// differ only in case; nil for none.
func canonical(h http.Header) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
	for name, vals := range h {
		key := http.CanonicalHeaderKey(name)
		out[key] = append(out[key], vals...)
	}
	return out
}

// noHeaders is the fingerprint of an empty header set, the commonest.
var noHeaders = fingerprintOf(nil)

// fingerprint is the pool key of a canonical header set: sha256 over the
// sorted names and their values. Values never appear in the key's text.
func fingerprint(h http.Header) string {
	if len(h) == 0 {
		return noHeaders
	}
	return fingerprintOf(h)
}

func fingerprintOf(h http.Header) string {
	var buf [16]string // the names, sorted: on the stack for a few
	names := buf[:0]
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var in [512]byte
	b := in[:0]
	for _, name := range names {
		b = append(append(b, name...), 0)
		for _, v := range h[name] {
			b = append(append(b, v...), 0)
		}
		b = append(b, 1)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// flatten turns h into the single-valued map mcp-go's transports take,
// joining repeated values with ", ".
func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, vals := range h {
		out[name] = strings.Join(vals, ", ")
	}
	return out
}

// acquire returns the session of op for ctx and hdr (its pool key follows
// the server's scope, scope.go), creating it (unconnected) if needed, with
// one reference held; a ScopeCall tool execution gets a one-shot session.
// When the pool is full it evicts the least recently used idle session;
// when every pooled session is busy an HTTP server gets a one-shot session
// that release closes, and a stdio server, which would need one more
// process than its cap, an error.
func (srv *remote) acquire(ctx context.Context, op string, hdr http.Header) (*session, error) {
	fp, principal, auth := "", "", ""
	if srv.spec.Transport == TransportStdio {
		hdr = nil // headers do not apply to stdio
	} else {
		hdr = canonical(hdr)
		principal, auth = srv.callerAuth(ctx, hdr) // callerauth.go
		fp = fingerprint(hdr)
	}
	var buf [192]byte // the pool key, on the stack for most
	key, oneShot := srv.poolKey(ctx, buf[:0], op, fp)
	if principal != "" && !oneShot {
		key = appendOwnKey(buf[:0], principalKeyPrefix, fp, principal)
	}
	s, err := srv.acquireKey(key, hdr, oneShot)
	if err == nil && principal != "" {
		s.setAuth(auth)
	}
	return s, err
}

// acquireKey is acquire of the session of key, made with hdr if needed.
func (srv *remote) acquireKey(key []byte, hdr http.Header, oneShot bool) (*session, error) {
	for range 3 { // a stdio eviction waits for the process to exit, then tries again
		s, lru, err := srv.acquireLocked(key, hdr, oneShot)
		switch {
		case lru == nil:
			return s, err
		case s != nil:
			srv.m.spawn(lru.shutdown) // shutdown takes srv.mu: never under it
			return s, nil
		}
		lru.shutdown()
	}
	return nil, fmt.Errorf("%w: all %d processes of the server are busy with other callers (max_sessions)", ErrUnavailable, srv.maxSessions())
}

// acquireLocked is one attempt of acquire. An evicted session comes back
// as lru, for the caller to shut down: beside the new session s, or, on a
// stdio server, without one (its process exits before another starts, then
// the caller tries again).
func (srv *remote) acquireLocked(k []byte, hdr http.Header, oneShot bool) (s, lru *session, err error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.m.isClosed() {
		return nil, nil, errClosed
	}
	if !oneShot {
		if s, ok := srv.pool[string(k)]; ok { // no string made for the lookup
			s.refs++
			return s, nil, nil
		}
	}
	key := string(k)
	if oneShot {
		s, err = srv.oneShotLocked(key, hdr) // scope.go
		return s, nil, err
	}
	stdio := srv.spec.Transport == TransportStdio
	if stdio && srv.live >= srv.maxSessions() || !stdio && len(srv.pool) >= srv.maxSessions() {
		lru = srv.evictLocked()
		switch {
		case lru == nil && stdio:
			return nil, nil, fmt.Errorf("%w: all %d processes of the server are busy with other callers (max_sessions)",
				ErrUnavailable, srv.maxSessions())
		case lru == nil:
			s, err = srv.oneShotLocked(key, hdr) // every pooled session is busy: not pooled
			return s, nil, err
		case stdio:
			return nil, lru, nil
		}
	}
	s = srv.newSessionLocked(key, hdr)
	s.refs = 1
	s.pooled = true
	srv.pool[key] = s
	return s, lru, nil
}

// newSessionLocked is a new session of srv, counted open until its
// shutdown.
func (srv *remote) newSessionLocked(key string, hdr http.Header) *session {
	srv.live++
	srv.gaugeLocked()
	s := newSession(srv, key, hdr)
	if srv.sharable(key) { // shared.go
		s.shared = sharedKey(srv.spec.Name, key)
	}
	return s
}

// shutDown counts the end of a session's shutdown.
func (srv *remote) shutDown() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.live--
	srv.gaugeLocked()
}

// release drops one reference to s, closing it if it is not (or no longer)
// pooled and nobody uses it.
func (srv *remote) release(s *session) {
	srv.mu.Lock()
	s.refs--
	s.lastUsed = time.Now()
	done := s.refs == 0 && !s.pooled
	srv.mu.Unlock()
	if done {
		srv.m.spawn(s.shutdown)
	}
}

// discard removes s from the pool, if it is there; release or the caller
// closes it once unused.
func (srv *remote) discard(s *session) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.unpoolLocked(s)
}

func (srv *remote) unpoolLocked(s *session) {
	if s.pooled && srv.pool[s.key] == s {
		delete(srv.pool, s.key)
		s.pooled = false
		srv.gaugeLocked()
	}
}

// evictLocked takes the least recently used idle session out of the pool
// and returns it, for the caller to shut down; nil when none is idle.
func (srv *remote) evictLocked() *session {
	var lru *session
	for _, s := range srv.pool {
		if s.refs == 0 && (lru == nil || s.lastUsed.Before(lru.lastUsed)) {
			lru = s
		}
	}
	if lru == nil {
		return nil
	}
	srv.unpoolLocked(lru)
	srv.evictedLocked() // scope.go
	return lru
}

// expire unpools and returns the idle sessions unused since before
// now-IdleTimeout. A stdio server's shared process (key "") is kept; its
// callers' own processes (ScopeCaller) are not.
func (srv *remote) expire(now time.Time) []*session {
	stdio := srv.spec.Transport == TransportStdio
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var out []*session
	for _, s := range srv.pool {
		if s.refs == 0 && now.Sub(s.lastUsed) >= srv.m.opts.IdleTimeout && !(stdio && s.key == "") {
			out = append(out, s)
		}
	}
	for _, s := range out {
		srv.unpoolLocked(s)
	}
	return out
}

// drain unpools and returns every pooled session, for Close.
func (srv *remote) drain() []*session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	out := make([]*session, 0, len(srv.pool))
	for _, s := range srv.pool {
		out = append(out, s)
	}
	for _, s := range out {
		srv.unpoolLocked(s)
	}
	return out
}

// invalidateTools drops the cached tool list of every session of srv: a
// tools/list_changed from one credential's session is taken as a change of
// the server's tools.
func (srv *remote) invalidateTools() {
	srv.mu.Lock()
	sessions := make([]*session, 0, len(srv.pool))
	for _, s := range srv.pool {
		sessions = append(sessions, s)
	}
	srv.mu.Unlock()
	for _, s := range sessions {
		s.tools.invalidate()
	}
}

// gaugeLocked sets pallasgw_downstream_sessions: the sessions open, pooled
// or one-shot, until their shutdown has ended.
func (srv *remote) gaugeLocked() {
	if mt := srv.m.opts.Metrics; mt != nil {
		mt.DownstreamSessions.WithLabelValues(srv.spec.Name).Set(float64(srv.live))
	}
}
