package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// AdminGuard protects the admin endpoints (/-/reload, /-/status).
//
// With a token, a request needs "Authorization: Bearer <token>" (compared in
// constant time over SHA-256 digests); otherwise it gets 401 with
// WWW-Authenticate. With an empty token only loopback peers (127.0.0.0/8,
// ::1, also as IPv4-mapped IPv6) that name a loopback Host (localhost or a
// loopback literal: not a DNS-rebinding page's name) pass, else 403; a
// loopback request that
// carries Forwarded, X-Forwarded-For or X-Real-IP is refused too, because a
// reverse proxy on the same host relayed it from someone else. onDeny nil
// answers with the status text.
func AdminGuard(token string, onDeny DenyFunc) func(http.Handler) http.Handler {
	if onDeny == nil {
		onDeny = defaultDeny
	}
	var want [sha256.Size]byte
	if token != "" {
		want = sha256.Sum256([]byte(token))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, reason := 0, AuthOK
			if token != "" {
				status, reason = checkAdminToken(r, want)
			} else {
				status, reason = checkLoopback(r)
			}
			if status != 0 {
				setChallenge(w, status, reason)
				onDeny(w, r, status, reason)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func checkAdminToken(r *http.Request, want [sha256.Size]byte) (int, string) {
	got, reason := bearerToken(r)
	if reason != "" {
		return http.StatusUnauthorized, reason
	}
	d := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(d[:], want[:]) != 1 {
		return http.StatusUnauthorized, AuthInvalidToken
	}
	return 0, AuthOK
}

func checkLoopback(r *http.Request) (int, string) {
	if !isLoopback(r.RemoteAddr) {
		return http.StatusForbidden, AuthAdminNotLoopback
	}
	if !isLoopbackHost(r.Host) {
		// A DNS-rebinding page in the operator's browser: a loopback
		// peer, the attacker's name in Host, no Origin on a GET.
		return http.StatusForbidden, AuthAdminHost
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if len(r.Header.Values(h)) > 0 {
			return http.StatusForbidden, AuthAdminProxied
		}
	}
	return 0, AuthOK
}

// isLoopbackHost reports whether a Host header names the loopback:
// localhost or a loopback address literal, any port.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// isLoopback reports whether a RemoteAddr ("host:port" or a bare address)
// is a loopback address.
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return addr.Unmap().IsLoopback()
}
