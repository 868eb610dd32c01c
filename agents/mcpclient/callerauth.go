package mcpclient

import (
	"context"
	"net/http"
	"sync/atomic"
)

// A server whose Authorization is each caller's own credential
// (ServerSpec.CallerAuth: the upstream OAuth token of the caller's
// principal, which is renewed while the caller stays the same) keys its
// sessions by the principal (Options.PrincipalOf) and the other outbound
// headers, never by the token: a renewed token goes on with the session it
// had. The session's Authorization is its principal's latest token, set
// when a call acquires the session and sent on every request of it (the
// session's transports, its GET stream, its raw calls). Every operation
// of such a server, the reads of what it offers among them, uses the
// principal's session: one principal's session never carries another's
// token. A request without a principal keeps its Authorization in the
// header set, keyed by its value as before.

// principalKeyPrefix starts the pool key of a principal's own session on a
// CallerAuth server. It is callerKeyPrefix, so that replicas share it as
// they share a caller's session (shared.go): the principal is the caller.
const principalKeyPrefix = callerKeyPrefix

// callerAuth takes the Authorization out of the canonical headers hdr of a
// request of ctx on a CallerAuth server, and returns it with the request's
// principal; it leaves hdr as it is and returns "", "" otherwise.
func (srv *remote) callerAuth(ctx context.Context, hdr http.Header) (principal, auth string) {
	if !srv.spec.CallerAuth || srv.m.opts.PrincipalOf == nil {
		return "", ""
	}
	if principal = srv.m.opts.PrincipalOf(ctx); principal == "" {
		return "", ""
	}
	auth = hdr.Get("Authorization")
	delete(hdr, "Authorization")
	return principal, auth
}

// principalKey is the pool key of principal's session on the header set
// of fingerprint fp.
func principalKey(fp, principal string) string {
	return principalKeyPrefix + fp + "\x00" + principal
}

// setAuth makes auth the Authorization of s's requests from now on ("":
// none). s serves one principal, whose latest token auth is.
func (s *session) setAuth(auth string) {
	if auth == "" {
		s.auth.Store(nil)
		return
	}
	if cur := s.auth.Load(); cur != nil && cur.Get("Authorization") == auth {
		return
	}
	s.auth.Store(&http.Header{"Authorization": {auth}})
}

// authHeader is s's Authorization as a header set, nil for none.
func authHeader(p *atomic.Pointer[http.Header]) http.Header {
	if p == nil {
		return nil
	}
	if h := p.Load(); h != nil {
		return *h
	}
	return nil
}

// callHeader is the header set a raw call on s sends: s's headers and its
// Authorization.
func (s *session) callHeader() http.Header {
	a := authHeader(&s.auth)
	if a == nil {
		return s.hdr
	}
	h := s.hdr.Clone()
	if h == nil {
		h = http.Header{}
	}
	h["Authorization"] = a["Authorization"]
	return h
}
