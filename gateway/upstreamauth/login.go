package upstreamauth

// The OpenID login of auth mode jwt: a browser proves it is a JWT caller
// by signing in at auth.jwt.issuer, as the gateway's own client there
// (registered dynamically, RFC 7591, and kept in the store), with the
// authorization code and PKCE; the identity is the userinfo endpoint's
// auth.jwt.identity_claim, the claim a caller's access token is named by.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/pallasgw/pallasgw/policy"
)

const (
	loginPath         = connectPath + "/login"
	loginCallbackPath = loginPath + "/callback"
	loginCookie       = "pallasgw-login"
	// loginClient names the gateway's login client among the registrations.
	loginClient = "\x00login"
)

// loginFlow is a login in progress, under its state.
type loginFlow struct {
	Next     string `json:"n"`
	Verifier string `json:"v"`
	Binder   string `json:"b"`
}

func loginKey(state string) string { return "upstream:login:" + digest(state) }

// loginConfig is the gateway's OpenID client at the jwt issuer.
func (m *Manager) loginConfig(ctx context.Context, st *settings) (*oauth2.Config, *serverMeta, error) {
	if st.jwtIssuer == "" {
		return nil, nil, errors.New("no auth.jwt.issuer")
	}
	v, err, _ := m.flight.Do("login\x00"+st.jwtIssuer, func() (any, error) {
		meta, err := fetchServerMeta(ctx, m.hc, st.jwtIssuer)
		if err != nil {
			return nil, err
		}
		if meta.UserinfoEndpoint == "" {
			return nil, fmt.Errorf("issuer %s has no userinfo endpoint", st.jwtIssuer)
		}
		redirect := st.publicURL + loginCallbackPath
		reg, err := m.registration(ctx, loginClient, meta, redirect, []string{"openid"}, "")
		if err != nil {
			return nil, err
		}
		return &loginClientCfg{meta: meta, oauth: &oauth2.Config{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, RedirectURL: redirect,
			Scopes: []string{"openid"}, Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInHeader}}}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	c := v.(*loginClientCfg)
	return c.oauth, c.meta, nil
}

type loginClientCfg struct {
	meta  *serverMeta
	oauth *oauth2.Config
}

// login starts the OpenID login, to come back to next.
func (m *Manager) login(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	if st.mode != policy.ModeJWT {
		http.NotFound(w, r)
		return
	}
	cfg, _, err := m.loginConfig(r.Context(), st)
	if err != nil {
		m.log.Warn("connect: the login at the identity provider cannot start", zap.Error(err))
		page(w, http.StatusBadGateway, "Cannot sign in now", "The identity provider cannot be reached or offers no client registration. Try again later.")
		return
	}
	state, binder, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	f := loginFlow{Next: safeNext(r.URL.Query().Get("next")), Verifier: verifier, Binder: digest(binder)}
	if err := m.saveFlow(r.Context(), loginFlows, state, f); err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable.")
		return
	}
	http.SetCookie(w, m.cookie(st, loginCookie, binder, flowTTL, http.SameSiteLaxMode))
	http.Redirect(w, r, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// loginCallback finishes the login: the identity the provider names is
// who this browser is, for whoami.
func (m *Manager) loginCallback(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	q := r.URL.Query()
	state, f, ok := openFlow[loginFlow](m, w, r, loginFlows, "Not signed in", "This answer from the identity provider matches no sign-in in progress.")
	if !ok {
		return
	}
	c, err := r.Cookie(m.cookieName(st, loginCookie))
	if err != nil || digest(c.Value) != f.Binder {
		page(w, http.StatusForbidden, "Not signed in", "This browser did not start this sign-in.")
		return
	}
	m.spendFlow(w, r, st, loginFlows, state, loginCookie)
	if e := q.Get("error"); e != "" {
		page(w, http.StatusOK, "Not signed in", fmt.Sprintf("The identity provider answered %q.", safeCode(e)))
		return
	}
	cfg, meta, err := m.loginConfig(r.Context(), st)
	if err != nil {
		page(w, http.StatusBadGateway, "Not signed in", "The identity provider cannot be reached.")
		return
	}
	hctx := context.WithValue(r.Context(), oauth2.HTTPClient, m.hc)
	t, err := cfg.Exchange(hctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		page(w, http.StatusBadGateway, "Not signed in", "The identity provider refused to complete the sign-in ("+oauthReason(err)+").")
		return
	}
	claims, err := m.userinfo(hctx, meta.UserinfoEndpoint, t)
	id, _ := claims[st.idClaim].(string)
	if err != nil || id == "" {
		page(w, http.StatusBadGateway, "Not signed in", fmt.Sprintf("The identity provider did not say who you are (claim %s).", st.idClaim))
		return
	}
	m.signIn(w, st, policy.Identity{Caller: id, Authenticated: true, Claims: policy.Claims(claims)}.Principal())
	http.Redirect(w, r, f.Next, http.StatusFound)
}

// userinfo reads the OpenID userinfo of t's subject.
func (m *Manager) userinfo(ctx context.Context, endpoint string, t *oauth2.Token) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, err
	}
	t.SetAuthHeader(req)
	req.Header.Set("Accept", "application/json")
	resp, err := m.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("userinfo: HTTP %d", resp.StatusCode)
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(&claims); err != nil {
		return nil, fmt.Errorf("userinfo: %w", err)
	}
	return claims, nil
}
