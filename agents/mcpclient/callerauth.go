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
// had. A call's requests carry the token the call was given (withCallerAuth),
// so that a call that starts after a renewal never sends the token the
// renewal replaced, even while an older call of the principal still runs;
// the session's own requests (its GET stream, a reconnect) carry the
// principal's latest token, set when a call acquires the session. Every operation
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

// callerAuthOf is the Authorization of a call of ctx with the headers hdr
// on srv when srv is a CallerAuth server and the call has a principal: the
// call's requests send it (withOp; callHeader, the session's round
// tripper). "" otherwise.
func (srv *remote) callerAuthOf(ctx context.Context, hdr http.Header) string {
	if !srv.spec.CallerAuth || srv.m.opts.PrincipalOf == nil || srv.m.opts.PrincipalOf(ctx) == "" {
		return ""
	}
	return hdr.Get("Authorization")
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

// callHeader is the header set a raw call of ctx on s sends: s's headers
// and the call's Authorization, else the session's.
func (s *session) callHeader(ctx context.Context) http.Header {
	a := authHeader(&s.auth)
	if auth := callOf(ctx).auth; auth != "" {
		a = http.Header{"Authorization": {auth}}
	}
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
