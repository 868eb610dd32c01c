package gateway

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

// serveAgent is the MCP endpoint of one agent, on the main port
// (/agents/{name}/mcp) and on legacy ports (/mcp). The checks run in this
// order: snapshot → agent exists → Origin → inbound auth → method → body
// limit → cancellation guard → the agent's handler (agents/endpoint:
// session ids, a proxy's fast tools/call, then mcp-go).
func (g *Gateway) serveAgent(w http.ResponseWriter, r *http.Request, s *Snapshot, name string) {
	rid := agents.RequestID(r.Context())
	g.calls.add()
	defer g.calls.done()
	// While draining, new calls are refused, but a session-based caller's
	// POSTs that serve a running call (its answer to a server-to-client
	// request, its notifications/cancelled) are let through: they are
	// told apart once the body is read.
	mayServeRunning := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != ""
	if g.draining.Load() && !mayServeRunning {
		g.refuseDraining(w, rid, name)
		return
	}
	a := s.agents.Get(name)
	if a == nil {
		g.refuse(w, http.StatusNotFound, rid, name, "unknown agent "+quoteClipped(name))
		return
	}
	start := time.Now()
	id, allowed, ok := g.authorize(w, r, s, name, rid, start) // traces and audits its refusals
	if !ok {
		return
	}
	// The request's server span starts once its message is decoded (its
	// _meta may carry the caller's trace context). A request answered
	// before that (over quota, a GET, a bad body, a DELETE) gets a span
	// of its own when it ends. The authorization is audited under
	// whichever span the request has, so the audit line has its trace_id.
	// Its level (policy.audit: listing or calls) follows the method.
	var span trace.Span
	var msg *wire.Message
	audit := func() {
		if allowed != nil {
			allowed.Listing = listingRequest(r.Method, msg)
			s.auditor.Record(r.Context(), *allowed)
			allowed = nil
		}
	}
	defer func() {
		if span == nil {
			r, span = s.traceUndecoded(r, name, start)
		}
		audit()
		endRequest(span, w)
	}()
	if r.Method == http.MethodPost && !g.takeRequest(w, r, s, id, rid, name) {
		return
	}
	r = r.WithContext(policy.WithIdentity(r.Context(), id))
	if id.Authenticated && id.Claims == nil && s.auth.Mode() == policy.ModeJWT {
		// A static token is the gateway's own credential: it never travels
		// (a JWT caller's token may, to forward_inbound_auth servers, and is
		// the subject of a token exchange).
		r.Header = r.Header.Clone()
		r.Header.Del("Authorization")
	}
	switch r.Method {
	case http.MethodPost, http.MethodDelete:
	case http.MethodGet:
		// Stateless: there is no standalone server-to-client stream. mcp-go
		// would key every GET stream on the empty session id and mix
		// clients' notifications, so answer as the transport allows.
		w.Header().Set("Allow", "POST, DELETE")
		g.refuse(w, http.StatusMethodNotAllowed, rid, name, "this stateless endpoint has no GET stream; POST requests")
		return
	default:
		w.Header().Set("Allow", "POST, DELETE")
		g.refuse(w, http.StatusMethodNotAllowed, rid, name, "method not allowed")
		return
	}
	if r.Method == http.MethodPost {
		var ok bool
		if msg, ok = g.readBody(w, r, s, rid, name); !ok {
			return
		}
	}
	if g.draining.Load() && !(mayServeRunning && servesRunningCall(msg)) {
		g.refuseDraining(w, rid, name)
		return
	}
	inflight := g.metrics.Inflight.WithLabelValues(name) // one lookup for both ends (P7)
	inflight.Inc()
	defer inflight.Dec()
	r, span = s.traceRequest(r, msg) // tracing.go; nil when off
	audit()
	tw, tr := endpoint.TrackStream(w, r, rid)
	a.Handler().ServeHTTP(tw, tr)
}

func (g *Gateway) refuseDraining(w http.ResponseWriter, rid, agent string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "1")
	g.refuse(w, http.StatusServiceUnavailable, rid, agent, "gateway is shutting down; retry on another instance")
}

// refuse answers an agent request the gateway refuses itself, before any
// agent runs (so no audit line names it), and logs it: the answer's
// request id is in the log, as Troubleshooting says.
func (g *Gateway) refuse(w http.ResponseWriter, status int, rid, agent, msg string) {
	writeError(w, status, rid, msg)
	g.logRefused(status, rid, agent, msg)
}

// logRefused writes the line "request refused" (request_id, agent,
// status, error); at debug for a 405, which MCP clients meet by design
// (the GET stream a stateless endpoint has not).
func (g *Gateway) logRefused(status int, rid, agent, msg string) {
	level := zap.InfoLevel
	if status == http.StatusMethodNotAllowed {
		level = zap.DebugLevel
	}
	if ce := g.log.Check(level, "request refused"); ce != nil {
		ce.Write(zap.String("request_id", rid), zap.String("agent", clipped(agent)), zap.Int("status", status), zap.String("error", msg))
	}
}

// clipped is s cut at maxEcho bytes for a log line.
func clipped(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return strings.ToValidUTF8(s[:maxEcho], "") + "…"
}

// readBody buffers the POST body within limits.max_body_bytes (413 past
// it), answers a body that is not one JSON-RPC message with a JSON-RPC
// error naming the problem, and drops notifications/cancelled that mcp-go
// would misroute.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, s *Snapshot, rid, agent string) (*wire.Message, bool) {
	limit := s.cfg.Limits.MaxBodyBytes
	body, err := readAllWithin(w, r, limit+1)
	if err != nil {
		msg := "reading request body: " + err.Error()
		writeJSONRPCError(w, http.StatusBadRequest, nil, -32700, rid, msg)
		g.logRefused(http.StatusBadRequest, rid, agent, msg)
		return nil, false
	}
	if int64(len(body)) > limit {
		msg := fmt.Sprintf("request body larger than limits.max_body_bytes (%d bytes)", limit)
		writeJSONRPCError(w, http.StatusRequestEntityTooLarge, nil, -32600, rid, msg)
		g.logRefused(http.StatusRequestEntityTooLarge, rid, agent, msg)
		return nil, false
	}
	msg, e := checkMessage(body)
	if e == nil {
		e = checkHeaders(r.Header, msg)
	}
	if e != nil {
		writeJSONRPCErrorData(w, http.StatusBadRequest, e.id, e.code, rid, e.msg, e.data)
		g.logRefused(http.StatusBadRequest, rid, agent, e.msg)
		return nil, false
	}
	r.Body = endpoint.NewBody(body, msg)
	if isUnroutableCancel(msg, r.Header) {
		// In stateless mode mcp-go keys in-flight requests by
		// "<Mcp-Session-Id>:"+id, so a cancel without a session id (or of
		// the sessionless 2026-07-28 protocol, where mcp-go ignores the id)
		// would cancel another client's request with the same id: drop it.
		// Session-based callers get an id from the agent endpoint's
		// initialize, so their cancels reach their own requests. A caller's
		// own request still ends when its connection closes.
		w.WriteHeader(http.StatusAccepted)
		return nil, false
	}
	return msg, true
}

// bodyReadTimeout bounds reading one request body. The servers have no
// ReadTimeout (a read deadline that passes cancels the request, which would
// end long SSE answers too), so without it a client that sends its headers
// and then trickles, or never sends, its body would hold a goroutine and a
// connection for as long as it likes.
var bodyReadTimeout = 60 * time.Second

// overLimitDrain and overLimitDrainTime bound what is read of a too long
// body after the limit (net/http waits as long before closing a
// connection whose request body it stopped reading).
const (
	overLimitDrain     = 1 << 20
	overLimitDrainTime = 500 * time.Millisecond
)

// readAllWithin reads up to n bytes of r's body within bodyReadTimeout.
// When it stops before the end of the body (an error, or n bytes read) the
// connection is closed after the answer: net/http would otherwise try to
// read the rest to keep the connection alive, with no deadline at all.
func readAllWithin(w http.ResponseWriter, r *http.Request, n int64) ([]byte, error) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) == nil
	body, err := readAll(io.LimitReader(r.Body, n), r.ContentLength, n)
	if err == nil && int64(len(body)) >= n {
		// Too long: read (and drop) what more of the body arrives within
		// overLimitDrainTime, up to overLimitDrain bytes, before answering.
		// Closing a connection with unread bytes resets it, and a client
		// still sending its body would get the reset instead of the 413;
		// one that stalls gets its 413 after the wait.
		if deadline {
			rc.SetReadDeadline(time.Now().Add(overLimitDrainTime))
		}
		_, _ = io.CopyN(io.Discard, r.Body, overLimitDrain)
	}
	if err != nil || int64(len(body)) >= n {
		w.Header().Set("Connection", "close")
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("the body did not arrive within %s", bodyReadTimeout)
		}
		return body, err
	}
	if deadline {
		rc.SetReadDeadline(time.Time{})
	}
	return body, nil
}

// readAll is io.ReadAll starting with room for a body of the declared
// length and the read that sees its end, so that a body as long as
// declared is read without growing the buffer. The room is at most n and
// 64 KiB: a declared length costs no memory before its bytes arrive.
func readAll(r io.Reader, declared, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(declared, 0), n, 64<<10)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func isUnroutableCancel(msg *wire.Message, h http.Header) bool {
	if msg.MethodName() != string(mcp.MethodNotificationCancelled) {
		return false
	}
	modern := mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) ||
		mcp.IsModernProtocol(msg.MetaString(mcp.MetaKeyProtocolVersion))
	return h.Get("Mcp-Session-Id") == "" || modern
}

// originAllowed is the DNS-rebinding guard: a request that carries an
// Origin (a browser's) passes when the Origin is in allowed_origins (or
// "*"), or when both the Origin's host and the request's Host are loopback
// names (localhost, 127.0.0.1, [::1], any port): a page served from the
// operator's own machine calling the gateway on it. A rebinding page has
// the attacker's name in both (Host: evil.example.com, Origin:
// http://evil.example.com), and a page on evil.example.com calling
// localhost has a non-loopback Origin: both are refused.
func originAllowed(allowed map[string]bool, origin, host string) bool {
	if allowed[origin] || allowed["*"] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null", opaque and malformed Origins
	}
	return isLoopbackName(u.Hostname()) && isLoopbackName(hostName(host))
}

// hostName is a Host header's name without its port and IPv6 brackets.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// isLoopbackName is true for the names a DNS answer cannot rebind:
// localhost and the loopback literals (127.0.0.1 and ::1 only, as the MCP
// transport's guidance lists them).
func isLoopbackName(h string) bool {
	switch strings.ToLower(h) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// agentRoute is the main port's /agents/{name}/mcp.
func (g *Gateway) agentRoute(w http.ResponseWriter, r *http.Request) {
	s := g.acquire()
	defer s.release()
	g.serveAgent(w, r, s, chi.URLParam(r, "name"))
}

// authorize applies inbound auth and the caller's agent
// rule: 401 with WWW-Authenticate or 403 when refused. A refusal is traced
// (a span from start) and audited here; an allowed decision that is to be
// audited comes back for the caller to record under the request's span
// (nil: none). A refused token's reason is logged and counted, the token
// never.
func (g *Gateway) authorize(w http.ResponseWriter, r *http.Request, s *Snapshot, agent, rid string, start time.Time) (policy.Identity, *policy.AuditEvent, bool) {
	resource := "" // what a JWT's audience is checked against: built only for one
	if s.auth.JWT() != nil {
		resource = s.resourceURL(r, agent)
	}
	id, status, reason, err := s.auth.CheckFor(r, agent, resource)
	if id.Claims != nil {
		id.Rule = s.callers.MatchRule(id.Claims)
	}
	d := policy.Decision{Allowed: status == 0, Reason: reason, Rule: policy.AuthRule(id, reason)}
	if d.Allowed {
		d = s.callers.AllowAgent(id.PolicyKey(), agent)
		if !d.Allowed {
			status = http.StatusForbidden
		}
	}
	ev := &policy.AuditEvent{RequestID: rid, Caller: id.Caller, Agent: agent, Decision: d, Latency: time.Since(start)}
	if d.Allowed {
		if s.auth.Mode() == policy.ModePassthrough {
			ev = nil
		}
		return id, ev, true
	}
	r, span := s.traceUndecoded(r, agent, start)
	defer endRequest(span, w)
	s.auditor.Record(r.Context(), *ev)
	if status == http.StatusUnauthorized || reason == policy.AuthMissingScope {
		g.metrics.AuthFailures.WithLabelValues(reason).Inc()
		g.log.Info("authentication refused", zap.String("request_id", rid), zap.String("agent", agent),
			zap.String("reason", reason), zap.Error(err))
	}
	if c := s.challenge(r, agent, status, reason); c != "" {
		w.Header().Set("WWW-Authenticate", c)
	}
	msg := "access denied: " + d.Reason
	if reason == policy.AuthMissingScope && err != nil {
		msg += ": " + err.Error()
	}
	writeError(w, status, rid, msg)
	return id, nil, false
}

// listingRequest reports a request that runs nothing: a session's DELETE,
// and every method but tools/call, prompts/get and resources/read (its
// audit line goes at policy.audit.listing). A body not read is not one.
func listingRequest(method string, msg *wire.Message) bool {
	if method == http.MethodDelete {
		return true
	}
	if msg == nil {
		return false
	}
	switch msg.MethodName() {
	case string(mcp.MethodToolsCall), string(mcp.MethodPromptsGet), string(mcp.MethodResourcesRead):
		return false
	}
	return true
}

// challenge is the WWW-Authenticate of a refusal: in mode jwt the MCP
// authorization spec's (RFC 9728 resource_metadata, the agent's scopes,
// RFC 6750 error codes), else a plain Bearer realm on 401.
func (s *Snapshot) challenge(r *http.Request, agent string, status int, reason string) string {
	v := s.auth.JWT()
	if v == nil {
		if status != http.StatusUnauthorized {
			return ""
		}
		if reason == policy.AuthInvalidToken {
			return `Bearer realm="pallasgw", error="invalid_token"`
		}
		return `Bearer realm="pallasgw"`
	}
	meta := fmt.Sprintf(`resource_metadata=%q`, s.metadataURL(r, agent))
	scopes := strings.Join(v.RequiredScopes(agent), " ")
	switch {
	case reason == policy.AuthMissingScope:
		return fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, %s`, scopes, meta)
	case status != http.StatusUnauthorized:
		return ""
	}
	c := "Bearer " + meta
	if scopes != "" {
		c += fmt.Sprintf(`, scope=%q`, scopes)
	}
	if reason != policy.AuthMissingToken && reason != policy.AuthMissingScheme {
		c += `, error="invalid_token"`
	}
	return c
}
