package upstreamauth

// Each server's OAuth client, as discovered: its authorization server, the
// gateway's registration there, the oauth2 configuration; found once per
// process and server (again after a reload changes the server).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/pallasgw/pallasgw/gateway/config"
)

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
