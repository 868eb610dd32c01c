package upstreamauth

// The Manager: one per gateway process, kept across reloads (its vault,
// discovered metadata and registrations survive them), told of each new
// config by Update.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/policy"
)

// Options build a Manager.
type Options struct {
	// KV is the shared session store; nil: this process's memory.
	KV      KV
	Logger  *zap.Logger
	Metrics *metrics.Metrics // nil: not counted
	// Client makes the calls to servers and authorization servers; nil: a
	// client with a 10 s timeout.
	Client *http.Client
}

// Manager gives callers' own tokens to servers with oauth and serves the
// connect pages. Safe for concurrent use.
type Manager struct {
	o      Options
	hc     *http.Client
	kv     KV
	vault  *vault
	log    *zap.Logger
	audit  *zap.Logger
	cfg    atomic.Pointer[settings]
	flight singleflight.Group // refreshes and discovery, per key

	mu      sync.Mutex
	servers map[string]*upstream // by name; survives reloads while unchanged
	links   map[string]pendingLink

	stop context.CancelFunc
}

// settings is what the Manager takes of one config.
type settings struct {
	publicURL string
	auth      *policy.Authenticator
	mode      string // auth.mode
	jwtIssuer string
	idClaim   string // auth.jwt.identity_claim
	servers   map[string]*config.Server
}

// New returns a Manager for cfg, sealing with cfg's credentials key (a
// random one when unset).
func New(cfg *config.Config, auth *policy.Authenticator, o Options) (*Manager, error) {
	key := config.CredentialKey(cfg.Credentials.Key)
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	var previous [][]byte
	for _, k := range cfg.Credentials.PreviousKeys {
		previous = append(previous, config.CredentialKey(k))
	}
	s, err := newSealer(key, previous)
	if err != nil {
		return nil, err
	}
	m := &Manager{o: o, hc: o.Client, kv: o.KV, log: o.Logger.Named("upstream"), audit: o.Logger.Named("audit"),
		servers: map[string]*upstream{}, links: map[string]pendingLink{}}
	if m.hc == nil {
		m.hc = &http.Client{Timeout: 10 * time.Second}
	}
	if m.kv == nil {
		m.kv = newMemoryKV()
	}
	m.vault = newVault(s, m.kv)
	m.vault.observe = m.observeState
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	if err := m.vault.listen(ctx); err != nil {
		// Another replica's writes reach this one's cache on a miss only.
		m.log.Warn("listening for other replicas' connections failed; their changes are seen after the cache's entries age", zap.Error(err))
	}
	m.Update(cfg, auth)
	return m, nil
}

// Counts are the connections this replica knows of (it read or wrote
// them), by server and state (connected, expired, failed): what
// pallasgw_upstream_connections exports, for /-/status and the console.
func (m *Manager) Counts() map[string]map[string]int { return m.vault.counts() }

// Close ends the Manager's subscription.
func (m *Manager) Close() { m.stop() }

// Update applies a new config: a server that is gone, or whose URL or
// oauth changed, is discovered again (a changed authorization server's
// tokens no longer open: the issuer is sealed into each).
func (m *Manager) Update(cfg *config.Config, auth *policy.Authenticator) {
	st := &settings{publicURL: strings.TrimSuffix(cfg.PublicURL, "/"), auth: auth, mode: cfg.Auth.Mode, servers: map[string]*config.Server{}}
	if cfg.Auth.JWT != nil {
		st.jwtIssuer, st.idClaim = cfg.Auth.JWT.Issuer, cfg.Auth.JWT.IdentityClaim
	}
	for name, s := range cfg.MCP.Servers {
		if s != nil && s.OAuth != nil {
			st.servers[name] = s
		}
	}
	m.mu.Lock()
	for name, u := range m.servers {
		if s, ok := st.servers[name]; !ok || u.fingerprint != serverFingerprint(s) {
			delete(m.servers, name)
			if m.o.Metrics != nil && !ok {
				m.o.Metrics.UpstreamConnections.DeletePartialMatch(map[string]string{"server": name})
			}
		}
	}
	m.mu.Unlock()
	m.cfg.Store(st)
}

// serverFingerprint tells one server's settings from another's.
func serverFingerprint(s *config.Server) string {
	o := s.OAuth
	return strings.Join([]string{s.URL, o.ClientID, o.ClientSecret.Value(), strings.Join(o.Scopes, " "), o.Audience, o.Resource, o.AuthorizationServer}, "\x00")
}

// upstream is one server's OAuth client, as discovered.
type upstream struct {
	name        string
	spec        *config.Server
	fingerprint string

	mu       sync.Mutex
	resolved *resolved // nil until discovery succeeds
}

// resolved is what discovery and registration found for a server.
type resolved struct {
	issuer     string
	meta       *serverMeta
	resource   string
	audience   string
	oauth      *oauth2.Config
	revocation string
}

func (m *Manager) upstream(name string) (*upstream, *settings) {
	st := m.cfg.Load()
	spec := st.servers[name]
	if spec == nil {
		return nil, st
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.servers[name]
	if u == nil {
		u = &upstream{name: name, spec: spec, fingerprint: serverFingerprint(spec)}
		m.servers[name] = u
	}
	return u, st
}

// resolve discovers u's authorization server and registers the gateway
// there, once (single-flight; a failure is tried again on the next call).
func (m *Manager) resolve(ctx context.Context, u *upstream, st *settings) (*resolved, error) {
	u.mu.Lock()
	r := u.resolved
	u.mu.Unlock()
	if r != nil {
		return r, nil
	}
	v, err, _ := m.flight.Do("resolve\x00"+u.name+"\x00"+u.fingerprint, func() (any, error) {
		r, err := m.discover(ctx, u, st)
		if err != nil {
			return nil, err
		}
		u.mu.Lock()
		u.resolved = r
		u.mu.Unlock()
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", u.name, err)
	}
	return v.(*resolved), nil
}

func (m *Manager) discover(ctx context.Context, u *upstream, st *settings) (*resolved, error) {
	o := u.spec.OAuth
	var prm resourceMeta
	if o.AuthorizationServer == "" || len(o.Scopes) == 0 {
		mu, err := resourceMetadataURL(ctx, m.hc, u.spec.URL)
		if err == nil {
			_, err = getJSON(ctx, m.hc, mu, &prm)
		}
		if err != nil && o.AuthorizationServer == "" {
			return nil, fmt.Errorf("discovering its authorization server (RFC 9728): %w", err)
		}
	}
	issuer := o.AuthorizationServer
	if issuer == "" {
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("its protected resource metadata names no authorization server; set oauth.authorization_server")
		}
		issuer = prm.AuthorizationServers[0]
	}
	meta, err := fetchServerMeta(ctx, m.hc, issuer)
	if err != nil {
		return nil, err
	}
	if len(meta.CodeChallengeMethodsSupported) > 0 && !contains(meta.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("authorization server %s does not support PKCE S256", issuer)
	}
	r := &resolved{issuer: issuer, meta: meta, resource: o.Resource, audience: o.Audience, revocation: meta.RevocationEndpoint}
	if r.resource == "" {
		r.resource = u.spec.URL
	}
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if contains(meta.ScopesSupported, "offline_access") && !contains(scopes, "offline_access") {
		scopes = append(append([]string{}, scopes...), "offline_access") // a refresh token, where it takes asking
	}
	redirect := st.publicURL + callbackPath
	reg := &registration{ClientID: o.ClientID, ClientSecret: o.ClientSecret.Value()}
	if reg.ClientID == "" {
		if reg, err = m.registration(ctx, u.name, meta, redirect, scopes, o.Audience); err != nil {
			return nil, err
		}
	}
	style := oauth2.AuthStyleInHeader
	if reg.ClientSecret == "" {
		style = oauth2.AuthStyleInParams
	}
	r.oauth = &oauth2.Config{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: style}}
	return r, nil
}

// registration is the gateway's dynamically registered client at meta's
// server for this redirect URL: from the store (sealed: it holds the
// client's secret), else registered now and stored for every replica.
func (m *Manager) registration(ctx context.Context, server string, meta *serverMeta, redirect string, scopes []string, audience string) (*registration, error) {
	sum := sha256.Sum256([]byte(strings.Join([]string{server, meta.Issuer, redirect, strings.Join(scopes, " "), audience}, "\x00")))
	key := "upstream:client:" + hex.EncodeToString(sum[:16])
	ad := aad("client", "", server, meta.Issuer)
	if raw, err := m.kv.Get(ctx, key); err != nil {
		return nil, err
	} else if len(raw) > 0 {
		if plain, _, err := m.vault.sealer.open(raw, ad); err == nil {
			var reg registration
			if json.Unmarshal(plain, &reg) == nil && reg.ClientID != "" {
				return &reg, nil
			}
		}
	}
	var aud []string
	if audience != "" {
		aud = []string{audience}
	}
	reg, err := register(ctx, m.hc, meta, "pallasgw ("+server+")", redirect, scopes, aud)
	if err != nil {
		return nil, err
	}
	plain, _ := json.Marshal(reg)
	if err := m.kv.Set(ctx, key, m.vault.sealer.seal(plain, ad), 0); err != nil {
		return nil, err
	}
	m.log.Info("registered at the authorization server (RFC 7591)", zap.String("server", server), zap.String("issuer", meta.Issuer))
	return reg, nil
}

// refreshMargin: a token that expires within it is refreshed first.
const refreshMargin = 30 * time.Second

// Authorization implements agents.UpstreamCredentials.
func (m *Manager) Authorization(ctx context.Context, server, principal string) (string, error) {
	u, st := m.upstream(server)
	if u == nil {
		return "", fmt.Errorf("server %s has no oauth", server)
	}
	r, err := m.resolve(ctx, u, st)
	if err != nil {
		return "", err
	}
	tok, err := m.vault.get(ctx, principal, server, r.issuer)
	if err != nil {
		return "", err
	}
	if tok == nil {
		return "", m.connectRequired(ctx, st, server, principal, "not connected yet")
	}
	if tok.refreshDue(time.Now()) {
		if tok.Refresh == "" {
			if time.Now().Before(tok.Expiry) {
				return "Bearer " + tok.Access, nil
			}
			return "", m.connectRequired(ctx, st, server, principal, "the connection expired")
		}
		if tok, err = m.refresh(ctx, u, r, principal, tok); err != nil {
			return "", err
		}
	}
	return "Bearer " + tok.Access, nil
}

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
// connection (a different, not yet due token), else nil.
func (m *Manager) renewed(ctx context.Context, server, issuer, principal string, old *Token) *Token {
	cur, err := m.vault.load(ctx, principal, server, issuer)
	if err != nil || cur == nil || cur.Access == old.Access || cur.refreshDue(time.Now()) {
		return nil
	}
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
			m.vault.remember(entryKey(principal, server), cached{tok: cur, issuer: issuer, at: time.Now(), server: server})
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

func (m *Manager) countRefresh(server, outcome string) {
	if m.o.Metrics != nil {
		m.o.Metrics.UpstreamRefreshes.WithLabelValues(server, outcome).Inc()
	}
}

func (m *Manager) countConnect(server, outcome string) {
	if m.o.Metrics != nil {
		m.o.Metrics.UpstreamConnects.WithLabelValues(server, outcome).Inc()
	}
}

func (m *Manager) observeState(server, from, to string) {
	if m.o.Metrics == nil || server == "" {
		return
	}
	if from != "" {
		m.o.Metrics.UpstreamConnections.WithLabelValues(server, from).Dec()
	}
	if to != "" {
		m.o.Metrics.UpstreamConnections.WithLabelValues(server, to).Inc()
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// randomToken is 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

var _ agents.UpstreamCredentials = (*Manager)(nil)
