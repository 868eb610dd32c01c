package mcpclient

// Whom a downstream session serves (ServerSpec.Scope, the config's
// session_scope). A downstream that keeps state per session (a browser, a
// shell, a database transaction, a scratch file) must not mix callers:
//
//   - ScopeCaller: one session per caller and outbound header set. The
//     caller is what Options.CallerOf says of the request's context (a
//     token's name, a JWT subject, an agent_id, an anonymous caller's
//     inbound session id); an anonymous caller without one (CallerOf
//     answers "" or Anonymous) uses the header set's own session. On a
//     stdio server each caller gets a process of its own.
//   - ScopeCall: a fresh session for each tool execution, closed after it
//     (never pooled).
//   - ScopeShared: one session per header set (stdio: one process), for
//     stateless servers.
//
// Reads of what the server offers (tools/list, prompts/list,
// resources/list and templates, its capabilities) and the stdio health
// probe use the header set's own session whatever the scope: they are the
// same for every caller that sends those headers, and their caches are
// kept once. What a caller does (tools/call, prompts/get, resources/read,
// logging/setLevel, tasks/*) uses the caller's session under ScopeCaller;
// under ScopeCall a tools/call gets its one-shot session and the rest use
// the header set's. A Streamable HTTP or SSE health probe opens a
// throwaway session of its own (probe.go) under every scope.
//
// A server whose Authorization is the caller's own renewable credential
// (ServerSpec.CallerAuth, upstream OAuth) keys every session, reads among
// them, by the principal instead of the token (callerauth.go).
//
// Every pool is bounded: the server's MaxSessions (default
// Options.MaxSessionsPerServer) pooled sessions, the least recently used
// idle one evicted for a new one (logged, counted in
// pallasgw_downstream_session_evictions_total: its caller's next call opens
// a fresh session), idle ones closed after Options.IdleTimeout (a shared
// stdio process is kept). pallasgw_downstream_sessions{server} counts the
// open sessions, pooled and one-shot. A stdio server never runs more
// processes than its cap: a call that would need one more is refused with
// ErrUnavailable.

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Session scopes (ServerSpec.Scope).
const (
	ScopeCaller = "caller"
	ScopeCall   = "call"
	ScopeShared = "shared"
)

// Anonymous is the caller of a request that names none: it shares the
// header set's session.
const Anonymous = "anonymous"

// serverReads are the operations that read what the server offers, the
// same for every caller of a header set: they use its own session.
var serverReads = map[string]bool{
	string(mcp.MethodToolsList):              true,
	string(mcp.MethodPromptsList):            true,
	string(mcp.MethodResourcesList):          true,
	string(mcp.MethodResourcesTemplatesList): true,
	string(mcp.MethodInitialize):             true, // Capabilities
	opProbe:                                  true,
}

// callerKeyPrefix starts the pool key of a caller's own session.
const callerKeyPrefix = "caller\x00"

// opProbe names the stdio health probe's ping (Probe).
const opProbe = "probe"

// poolKey appends to key the pool key of op on srv for ctx with the
// canonical header fingerprint fp, and reports whether op gets a one-shot
// session (ScopeCall's tool execution: never pooled, closed after the
// call). The key is built in the caller's buffer: a pooled session is
// found without making a string (acquireLocked).
func (srv *remote) poolKey(ctx context.Context, key []byte, op, fp string) (_ []byte, oneShot bool) {
	if serverReads[op] {
		return append(key, fp...), false
	}
	switch srv.spec.Scope {
	case ScopeCaller:
		if c := srv.callerOf(ctx); c != "" && c != Anonymous {
			// \x00 cannot occur in a caller key's parts as the pool sees
			// them: fp is hex, and a caller's \x00 only lengthens its own key.
			return appendOwnKey(key, callerKeyPrefix, fp, c), false
		}
	case ScopeCall:
		if strings.HasPrefix(op, string(mcp.MethodToolsCall)) {
			return append(key, fp...), true
		}
	}
	return append(key, fp...), false
}

// appendOwnKey appends the pool key of one caller's (or principal's)
// session on the header set of fingerprint fp.
func appendOwnKey(key []byte, prefix, fp, owner string) []byte {
	return append(append(append(append(key, prefix...), fp...), 0), owner...)
}

// callerOf is the caller of ctx, "" when Options.CallerOf is not set.
func (srv *remote) callerOf(ctx context.Context) string {
	if f := srv.m.opts.CallerOf; f != nil {
		return f(ctx)
	}
	return ""
}

// maxSessions is srv's cap on open sessions.
func (srv *remote) maxSessions() int {
	if srv.spec.MaxSessions > 0 {
		return srv.spec.MaxSessions
	}
	return srv.m.opts.MaxSessionsPerServer
}

// oneShotLocked returns a session for one call that is not pooled, which
// release closes; a stdio server refuses it past its cap of processes.
func (srv *remote) oneShotLocked(key string, hdr http.Header) (*session, error) {
	if srv.spec.Transport == TransportStdio && srv.live >= srv.maxSessions() {
		return nil, fmt.Errorf("%w: all %d processes of the server are busy with other calls (max_sessions)",
			ErrUnavailable, srv.maxSessions())
	}
	s := srv.newSessionLocked(key, hdr)
	s.refs = 1
	return s, nil
}

// evictedLocked logs and counts the eviction of an idle session for a new
// one. The key is not logged: it names a caller.
func (srv *remote) evictedLocked() {
	srv.m.log.Info("downstream session closed for another (least recently used); its caller's next call opens a new one",
		zap.String(fieldServer, srv.spec.Name), zap.Int("max_sessions", srv.maxSessions()))
	if mt := srv.m.opts.Metrics; mt != nil {
		mt.DownstreamEvictions.WithLabelValues(srv.spec.Name).Inc()
	}
}
