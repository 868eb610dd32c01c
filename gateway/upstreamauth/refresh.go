package upstreamauth

// Renewal: before expiry, after a downstream's 401, single-flight within
// the process and across replicas; and the wait of a call whose caller is
// connecting.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// Rejected implements agents.UpstreamCredentials: server answered 401 to
// principal's token (revoked, or expired early), so this replica renews it
// before its next use; a refresh token the provider no longer honours then
// asks the person to connect again.
func (m *Manager) Rejected(ctx context.Context, server, principal string) {
	u, _ := m.upstream(server)
	if u == nil {
		return
	}
	u.mu.Lock()
	r := u.resolved
	u.mu.Unlock()
	if r == nil {
		return
	}
	m.vault.expire(principal, server, r.issuer)
}

// WaitConnected implements agents.UpstreamCredentials: it waits until
// principal has a token for server (connected on any replica), at most the
// server's oauth.connect_wait.
func (m *Manager) WaitConnected(ctx context.Context, server, principal string) bool {
	u, st := m.upstream(server)
	if u == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, u.spec.OAuth.ConnectWait)
	defer cancel()
	for {
		changed := m.vault.changedCh() // before the look: no change is missed
		r, err := m.resolve(ctx, u, st)
		if err != nil {
			return false
		}
		if tok, err := m.vault.get(ctx, principal, server, r.issuer); err == nil && tok != nil {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// refresh renews principal's token, once at a time across replicas: once
// per process (single-flight), and among replicas by a claim in the store
// (a used refresh token is gone at most servers, so two replicas renewing
// at once would cost the loser the connection). A replica that finds the
// claim taken waits for the holder's write. A refusal drops the connection
// and asks the person to connect again, unless another replica renewed it
// meanwhile.
func (m *Manager) refresh(ctx context.Context, u *upstream, r *resolved, principal string, old *Token) (*Token, error) {
	v, err, _ := m.flight.Do("refresh\x00"+entryKey(principal, u.name), func() (any, error) {
		if cur := m.renewed(ctx, u.name, r.issuer, principal, old); cur != nil {
			return cur, nil
		}
		claim := "upstream:refresh:" + entryKey(principal, u.name)
		got, err := m.kv.Claim(ctx, claim, []byte{1}, refreshClaimTTL)
		if err != nil {
			return nil, err
		}
		if !got {
			if cur := m.awaitRenewal(ctx, u.name, r.issuer, principal, old); cur != nil {
				return cur, nil
			}
			// The holder wrote nothing in time (it failed, or died): go on.
		} else {
			defer func() { _ = m.kv.Set(context.WithoutCancel(ctx), claim, nil, time.Millisecond) }()
		}
		hctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, m.hc)
		t, err := r.oauth.TokenSource(hctx, &oauth2.Token{RefreshToken: old.Refresh, Expiry: time.Unix(1, 0)}).Token()
		if err != nil {
			if cur := m.renewed(ctx, u.name, r.issuer, principal, old); cur != nil {
				return cur, nil // another replica won the race after all
			}
			m.countRefresh(u.name, "error")
			reason := oauthReason(err)
			m.audit.Warn("upstream token refresh failed", zap.String("server", u.name), zap.String("principal", principal), zap.String("reason", reason))
			if !refused(err) {
				// Unreachable or failing: the connection is kept, and the
				// next call tries again.
				return nil, fmt.Errorf("server %s: renewing your connection failed (%s): its authorization server %s cannot be reached; try again", u.name, reason, r.issuer)
			}
			_ = m.vault.fail(ctx, principal, u.name, r.issuer)
			return nil, refreshFailed{err}
		}
		m.countRefresh(u.name, "ok")
		tok := fromOAuth(t, old)
		if err := m.vault.put(ctx, principal, u.name, r.issuer, tok); err != nil {
			return nil, err
		}
		return tok, nil
	})
	var failed refreshFailed
	if errors.As(err, &failed) {
		return nil, m.connectRequired(ctx, m.cfg.Load(), u.name, principal, "the connection expired and could not be renewed")
	}
	if err != nil {
		return nil, err
	}
	return v.(*Token), nil
}

// refreshClaimTTL bounds a replica's claim on a renewal, and how long
// another waits for it.
const refreshClaimTTL = 10 * time.Second

// renewed is the store's token when another replica renewed old's
// connection (a different, not yet due token), else nil; this replica
// caches it (unless it wrote the entry meanwhile), so that its next calls
// read no store.
func (m *Manager) renewed(ctx context.Context, server, issuer, principal string, old *Token) *Token {
	epoch := m.vault.readEpoch()
	cur, err := m.vault.load(ctx, principal, server, issuer)
	if err != nil || cur == nil || cur.Access == old.Access || cur.refreshDue(time.Now()) {
		return nil
	}
	m.vault.rememberRead(entryKey(principal, server), cached{tok: cur, issuer: issuer, at: time.Now(), server: server}, epoch)
	return cur
}

// awaitRenewal waits for the replica that holds the claim to write the
// renewed token (its write wakes this replica's vault), at most the claim's
// life.
func (m *Manager) awaitRenewal(ctx context.Context, server, issuer, principal string, old *Token) *Token {
	ctx, cancel := context.WithTimeout(ctx, refreshClaimTTL)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond) // a missed invalidation: read the store now and then
	defer tick.Stop()
	for {
		changed := m.vault.changedCh()
		if cur := m.renewed(ctx, server, issuer, principal, old); cur != nil {
			return cur
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// refreshFailed is the authorization server's refusal of a refresh (the
// refresh token is no longer good), as opposed to its absence or the
// store's failure.
type refreshFailed struct{ error }

// refused reports an OAuth error answer of the token endpoint (RFC 6749
// §5.2: HTTP 400 or 401 with an error code), as opposed to a server that
// could not be reached or failed (5xx).
func refused(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 && (re.ErrorCode != "" || re.Response.StatusCode == http.StatusUnauthorized)
}

// fromOAuth is the vault's record of t; a refresh answer without a new
// refresh token keeps the old one.
func fromOAuth(t *oauth2.Token, old *Token) *Token {
	now := time.Now()
	tok := &Token{Access: t.AccessToken, Refresh: t.RefreshToken, Expiry: t.Expiry, Created: now, Issued: now}
	if s, ok := t.Extra("scope").(string); ok {
		tok.Scope = s
	}
	if old != nil {
		tok.Created = old.Created
		if tok.Refresh == "" {
			tok.Refresh = old.Refresh
		}
	}
	return tok
}

// oauthReason is the error code of an OAuth error answer (never its
// body, which may echo a token), else "unreachable".
func oauthReason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return re.ErrorCode
		}
		if re.Response != nil {
			return fmt.Sprintf("http_%d", re.Response.StatusCode)
		}
	}
	return "unreachable"
}
