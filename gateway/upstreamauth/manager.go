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
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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

	ctx  context.Context // ends at Close
	stop context.CancelFunc
	bg   sync.WaitGroup // purges of dropped servers' tokens (Update)
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
	m.ctx, m.stop = context.WithCancel(context.Background())
	if err := m.vault.listen(m.ctx); err != nil {
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

// Close ends the Manager's subscription and the purges under way.
func (m *Manager) Close() {
	m.stop()
	m.bg.Wait()
}

// Update applies a new config: a server that is gone, or whose URL or
// oauth changed, is discovered again. The tokens of a server that is gone
// (or lost its oauth) or whose oauth.authorization_server changed are
// deleted from the store (purge).
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
	if prev := m.cfg.Swap(st); prev != nil {
		m.purgeDropped(prev, st)
	}
}

// purgeDropped deletes, in the background, the tokens of the servers of
// prev that st drops or points at another authorization server.
func (m *Manager) purgeDropped(prev, st *settings) {
	for name, old := range prev.servers {
		s, ok := st.servers[name]
		why := ""
		switch {
		case !ok:
			why = "the server or its oauth was removed"
		case s.OAuth.AuthorizationServer != old.OAuth.AuthorizationServer:
			why = "its authorization server changed"
		default:
			continue
		}
		m.bg.Add(1)
		go func() {
			defer m.bg.Done()
			n, err := m.vault.purge(m.ctx, name)
			if err != nil {
				m.log.Warn("dropping a server's upstream tokens failed; they stay sealed in the store, unused",
					zap.String("server", name), zap.String("reason", why), zap.Int("dropped", n), zap.Error(err))
				return
			}
			m.audit.Info("upstream tokens dropped", zap.String("server", name), zap.String("reason", why), zap.Int("connections", n))
		}()
	}
}

// serverFingerprint tells one server's settings from another's.
func serverFingerprint(s *config.Server) string {
	o := s.OAuth
	return strings.Join([]string{s.URL, o.ClientID, o.ClientSecret.Value(), strings.Join(o.Scopes, " "), o.Audience, o.Resource, o.AuthorizationServer}, "\x00")
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
