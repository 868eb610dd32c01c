package mcpclient

import (
	"bufio"
	"context"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// A lean HTTP/1.1 client transport for the raw calls (raw.go, rawstream.go),
// the downstream half of a proxied tools/call. net/http's Transport hands
// each request to a writer goroutine of its connection and gets the response
// back from a reader goroutine: three goroutine handoffs per call, with the
// channels, selects and copies around them. On this path that costs more CPU
// than the gateway's own work on the call. h1Transport does the round trip
// on the caller's goroutine: it writes the request into the connection's
// buffered writer and flushes once (head and a small body in one write),
// reads the response head from the connection's buffered reader, and
// streams the body from it. The connection goes back to a small LIFO pool
// when the body reaches its end. No goroutine runs per connection; the
// request's context interrupts a blocked dial, write or read by setting a
// deadline in the past.
//
// It does not do TLS, HTTP/2, proxies, protocol upgrades, Expect:
// 100-continue, transparent gzip, redirects or retries, nor bodies over
// h1MaxBody or of unknown length: a request that needs any of these goes
// to the fallback *http.Transport unchanged, and
// mcp-go's sessions use that transport directly. It never sends a request
// twice: a POST that failed may have been delivered, and the callers decide
// about retries. A pooled connection is checked with a non-blocking peek
// before reuse (h1_peek_linux.go), so a connection the server closed while
// idle is dropped instead of written to.

// Limits of h1Transport where the fallback transport leaves them at zero,
// and its dialer's, which are newHTTPTransport's.
const (
	h1MaxIdle        = 256
	h1MaxIdlePerHost = 128
	h1IdleTimeout    = 90 * time.Second
	h1MaxHeaderBytes = 10 << 20 // net/http's default for a response head
	h1DialTimeout    = 10 * time.Second
	h1DialKeepAlive  = 30 * time.Second

	// h1MaxBody bounds the bodies h1Transport sends. It reads the response
	// only once the request is written, so a server that answers early (a
	// 404 or 413 before reading the body) and closes would make a long
	// write fail and its answer be lost; net/http reads while it writes. A
	// body this small fits the socket buffers, so its write completes and
	// the answer is read. A tools/call is far smaller as a rule.
	h1MaxBody = 64 << 10
)

// interrupted is the deadline that makes a connection's I/O fail at once.
var interrupted = time.Unix(1, 0)

// h1Transport is an http.RoundTripper for plain HTTP/1.1 with keep-alive.
// Requests it does not handle go to fallback.
type h1Transport struct {
	fallback       http.RoundTripper
	proxy          func(*http.Request) (*url.URL, error) // nil: no proxy
	dialer         net.Dialer
	maxIdle        int
	maxIdlePerHost int
	idleTimeout    time.Duration
	maxHeaderBytes int64

	mu     sync.Mutex
	idle   map[string][]*h1Conn // by host:port, least recently used first; guarded by mu
	nidle  int                  // pooled connections in all; guarded by mu
	gen    uint64               // bumped by CloseIdleConnections; guarded by mu
	reaper *time.Timer          // closes expired idle connections; nil when none are pooled; guarded by mu
}

// newH1Transport returns a transport that sends what it cannot handle to tr
// and takes tr's proxy setting and idle limits.
func newH1Transport(tr *http.Transport) *h1Transport {
	return &h1Transport{
		fallback:       tr,
		proxy:          tr.Proxy,
		dialer:         net.Dialer{Timeout: h1DialTimeout, KeepAlive: h1DialKeepAlive},
		maxIdle:        positive(tr.MaxIdleConns, h1MaxIdle),
		maxIdlePerHost: positive(tr.MaxIdleConnsPerHost, h1MaxIdlePerHost),
		idleTimeout:    positive(tr.IdleConnTimeout, h1IdleTimeout),
		maxHeaderBytes: positive(tr.MaxResponseHeaderBytes, h1MaxHeaderBytes),
		idle:           make(map[string][]*h1Conn),
	}
}

// positive returns v, or def when v is not above zero.
func positive[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// RoundTrip implements http.RoundTripper. It never retries.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	addr, ok := t.direct(req)
	if !ok {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		closeRequestBody(req)
		return nil, context.Cause(ctx)
	}
	pc, err := t.conn(ctx, addr)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	return pc.roundTrip(ctx, req)
}

// CloseIdleConnections closes the pooled connections, and the fallback's.
// Connections in use at the time are closed when their response ends.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = make(map[string][]*h1Conn)
	t.nidle = 0
	t.gen++
	if t.reaper != nil {
		t.reaper.Stop()
		t.reaper = nil
	}
	t.mu.Unlock()
	for _, conns := range idle {
		for _, pc := range conns {
			pc.conn.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// direct returns the address to dial for req when this transport handles
// it: an http URL, no proxy, and nothing in the request that only net/http
// implements. Invalid requests go to the fallback too, which rejects them.
func (t *h1Transport) direct(req *http.Request) (string, bool) {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" || req.Cancel != nil || !plainRequest(req) ||
		req.ContentLength < 0 || req.ContentLength > h1MaxBody || (req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody) {
		return "", false
	}
	if t.proxy != nil {
		if p, err := t.proxy(req); p != nil || err != nil {
			return "", false
		}
	}
	if !isASCII(u.Host) {
		return "", false // net/http converts the name to punycode
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80"), true
	}
	return u.Host, true
}

// plainRequest reports whether req has a valid method and valid header
// fields, and asks for no upgrade and no 100-continue.
func plainRequest(req *http.Request) bool {
	if req.Method != "" && !isToken(req.Method) {
		return false
	}
	for name, vals := range req.Header {
		if !isToken(name) || strings.EqualFold(name, "Upgrade") || strings.EqualFold(name, "Expect") {
			return false
		}
		for _, v := range vals {
			if !validFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validFieldValue reports whether v has no control characters but tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// closeRequestBody closes the body of a request that was not written, as a
// RoundTripper must.
func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// conn returns a live pooled connection to addr or dials a new one.
func (t *h1Transport) conn(ctx context.Context, addr string) (*h1Conn, error) {
	if pc := t.getIdle(addr); pc != nil {
		return pc, nil
	}
	t.mu.Lock()
	gen := t.gen
	t.mu.Unlock()
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	return newH1Conn(t, addr, gen, c), nil
}

// newH1Conn is the h1Conn of c, a connection to addr dialed in generation
// gen of t.
func newH1Conn(t *h1Transport, addr string, gen uint64, c net.Conn) *h1Conn {
	pc := &h1Conn{t: t, key: addr, gen: gen, conn: c, limit: math.MaxInt64, alive: aliveCheck(c)}
	pc.br = bufio.NewReader(pc)
	pc.w = connWriter{conn: c}
	pc.bw = bufio.NewWriter(&pc.w)
	pc.interrupt = func() { c.SetDeadline(interrupted) }
	return pc
}

// getIdle takes the most recently used connection to addr out of the pool,
// closing expired and dead ones on the way.
func (t *h1Transport) getIdle(addr string) *h1Conn {
	for {
		t.mu.Lock()
		conns := t.idle[addr]
		n := len(conns)
		if n == 0 {
			t.mu.Unlock()
			return nil
		}
		pc := conns[n-1]
		if time.Since(pc.idleAt) >= t.idleTimeout {
			// The newest has expired, so have all the others.
			stale := slices.Clone(conns)
			clear(conns)
			t.idle[addr] = conns[:0]
			t.nidle -= n
			t.mu.Unlock()
			for _, c := range stale {
				c.conn.Close()
			}
			return nil
		}
		conns[n-1] = nil
		t.idle[addr] = conns[:n-1]
		t.nidle--
		t.mu.Unlock()
		if pc.alive() {
			return pc
		}
		pc.conn.Close()
	}
}

// put pools pc as the most recently used connection to its host, unless
// CloseIdleConnections ran since it was dialed or the pool is full. Expired
// connections of the host are closed, and its oldest when the host is at
// its bound.
func (t *h1Transport) put(pc *h1Conn) {
	now := time.Now()
	pc.idleAt = now
	t.mu.Lock()
	conns, known := t.idle[pc.key]
	drop := 0
	for drop < len(conns) && (len(conns)-drop >= t.maxIdlePerHost || now.Sub(conns[drop].idleAt) >= t.idleTimeout) {
		drop++
	}
	var stale []*h1Conn
	if drop > 0 {
		stale = slices.Clone(conns[:drop])
		conns = slices.Delete(conns, 0, drop)
		t.nidle -= drop
	}
	keep := pc.gen == t.gen && t.nidle < t.maxIdle
	if keep {
		if !known && len(t.idle) >= t.maxIdle {
			t.sweepLocked()
		}
		t.idle[pc.key] = append(conns, pc)
		t.nidle++
		if t.reaper == nil {
			t.reaper = time.AfterFunc(t.idleTimeout, t.reap)
		}
	} else if known {
		t.idle[pc.key] = conns
	}
	t.mu.Unlock()
	if !keep {
		pc.conn.Close()
	}
	for _, c := range stale {
		c.conn.Close()
	}
}

// reap closes the idle connections that have expired, as net/http's idle
// timer does (a server seldom closes them first, and each holds a file
// descriptor), and sets its timer for the next expiry while any remain.
// It runs on the timer's goroutine.
func (t *h1Transport) reap() {
	now := time.Now()
	var expired []*h1Conn
	next := time.Duration(0)
	t.mu.Lock()
	for key, conns := range t.idle {
		n := 0 // least recently used first
		for n < len(conns) && now.Sub(conns[n].idleAt) >= t.idleTimeout {
			n++
		}
		expired = append(expired, conns[:n]...)
		conns = slices.Delete(conns, 0, n)
		t.nidle -= n
		if len(conns) == 0 {
			delete(t.idle, key)
			continue
		}
		t.idle[key] = conns
		if d := t.idleTimeout - now.Sub(conns[0].idleAt); next == 0 || d < next {
			next = d
		}
	}
	if t.reaper != nil { // else CloseIdleConnections stopped it
		if next > 0 {
			t.reaper.Reset(next)
		} else {
			t.reaper = nil
		}
	}
	t.mu.Unlock()
	for _, pc := range expired {
		pc.conn.Close()
	}
}

// sweepLocked forgets the hosts with no pooled connection, so that the map
// holds at most maxIdle hosts.
func (t *h1Transport) sweepLocked() {
	for key, conns := range t.idle {
		if len(conns) == 0 {
			delete(t.idle, key)
		}
	}
}

// idleCount returns the number of pooled connections.
func (t *h1Transport) idleCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nidle
}
