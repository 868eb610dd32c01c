package upstreamauth

// The connect pages. A caller without a connection is given
// {public_url}/connect/{id}: single-use, short-lived, bound to its
// principal and the server. Opening it first proves the browser is that
// principal (whoami.go); a mismatch connects nothing. Then the flow is
// bound to an HttpOnly cookie that /connect/callback checks with the
// OAuth state, and the tokens the code buys go to the vault.
//
//	GET  /connect/            the caller's connections (JSON with Accept: application/json)
//	POST /connect/start       form server=X: a connect link for the caller, followed
//	POST /connect/revoke      form server=X: forget the caller's connection
//	POST /connect/signin      form token, next: tokens mode's sign-in
//	GET  /connect/{id}        the connect link
//	GET  /connect/callback    the authorization server's redirect
//	GET  /connect/login       jwt mode's OpenID login (login.go), and its /callback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/pallasgw/pallasgw/agents"
)

const (
	connectPath  = "/connect"
	callbackPath = connectPath + "/callback"
	// linkTTL bounds a connect link; flowTTL the time from opening it to
	// the authorization server's redirect.
	linkTTL = 10 * time.Minute
	flowTTL = 10 * time.Minute
)

// link is a connect link's record in the store.
type link struct {
	Principal string `json:"p"`
	Server    string `json:"s"`
	Used      bool   `json:"u,omitempty"`
}

// pendingLink is a link this replica handed out, reused for the same
// principal and server while it has most of its life left.
type pendingLink struct {
	id      string
	expires time.Time
}

// flow is an authorization in progress, under its state.
type flow struct {
	Principal string `json:"p"`
	Server    string `json:"s"`
	Issuer    string `json:"i"`
	Verifier  string `json:"v"`
	Binder    string `json:"b"` // digest of the flow cookie
}

func linkKey(id string) string { return "upstream:link:" + digest(id) }

// flowCookieName is the cookie of the flow under state: one per flow, so
// that two connections started in one browser do not undo each other.
func flowCookieName(state string) string { return flowCookie + "-" + digest(state)[:12] }
func flowKey(state string) string        { return "upstream:flow:" + digest(state) }

// connectRequired mints (or reuses) principal's link for server.
func (m *Manager) connectRequired(ctx context.Context, st *settings, server, principal, reason string) error {
	k := entryKey(principal, server)
	m.mu.Lock()
	p, ok := m.links[k]
	m.mu.Unlock()
	if !ok || time.Until(p.expires) < linkTTL/2 {
		id := randomToken()
		raw, _ := json.Marshal(link{Principal: principal, Server: server})
		if err := m.kv.Set(ctx, linkKey(id), raw, linkTTL); err != nil {
			return err
		}
		p = pendingLink{id: id, expires: time.Now().Add(linkTTL)}
		m.mu.Lock()
		if len(m.links) >= maxCached {
			for old := range m.links {
				delete(m.links, old)
				break
			}
		}
		m.links[k] = p
		m.mu.Unlock()
	}
	return &agents.ConnectRequired{Server: server, URL: st.publicURL + connectPath + "/" + p.id, ID: digest(p.id), Reason: reason}
}

// Handler serves /connect/...; mount it at /connect and /connect/*.
func (m *Manager) Handler() http.Handler {
	r := chi.NewRouter()
	r.Get(connectPath, m.list)
	r.Get(connectPath+"/", m.list)
	r.Post(connectPath+"/start", m.start)
	r.Post(connectPath+"/revoke", m.revoke)
	r.Post(connectPath+"/signin", m.signin)
	r.Get(callbackPath, m.callback)
	r.Get(loginPath, m.login)
	r.Get(loginCallbackPath, m.loginCallback)
	r.Get(connectPath+"/{id}", m.open)
	return r
}

// open is the connect link: who opens it must be its principal.
func (m *Manager) open(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	id := chi.URLParam(r, "id")
	raw, err := m.kv.Get(r.Context(), linkKey(id))
	if err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable; reload this page in a moment.")
		return
	}
	var l link
	if len(raw) == 0 || json.Unmarshal(raw, &l) != nil || l.Used {
		page(w, http.StatusGone, "This link has expired",
			"Connect links work once and for a few minutes. Call the tool again for a new link, or open /connect/ to connect.")
		return
	}
	who, ok := m.whoami(r)
	if !ok {
		m.askSignIn(w, r, st, r.URL.Path)
		return
	}
	if who != l.Principal {
		m.countConnect(l.Server, "mismatch")
		m.audit.Warn("upstream connect refused: the link was opened by another caller", zap.String("server", l.Server),
			zap.String("principal", l.Principal), zap.String("opened_by", who))
		page(w, http.StatusForbidden, "Nothing was connected",
			"This link was made for another account than the one you are signed in as. Nothing was connected. If someone sent you this link, do not use it.")
		return
	}
	u, _ := m.upstream(l.Server)
	if u == nil {
		page(w, http.StatusNotFound, "Unknown server", "The server this link was made for is no longer configured.")
		return
	}
	m.startFlow(w, r, st, u, id, l)
}

// startFlow spends link id and sends the browser to the authorization
// server, the flow bound to a cookie of this browser.
func (m *Manager) startFlow(w http.ResponseWriter, r *http.Request, st *settings, u *upstream, id string, l link) {
	res, err := m.resolve(r.Context(), u, st)
	if err != nil {
		m.countConnect(l.Server, "error")
		m.log.Warn("connect: the server's authorization server cannot be reached", zap.String("server", l.Server), zap.Error(err))
		page(w, http.StatusBadGateway, "Cannot connect now", "The authorization server of "+l.Server+" cannot be reached. Try again later.")
		return
	}
	// Single use: the link is spent before the browser leaves.
	l.Used = true
	spent, _ := json.Marshal(l)
	if err := m.kv.Set(r.Context(), linkKey(id), spent, linkTTL); err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable; reload this page in a moment.")
		return
	}
	state, binder, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	f := flow{Principal: l.Principal, Server: l.Server, Issuer: res.issuer, Verifier: verifier, Binder: digest(binder)}
	if err := m.saveFlow(r.Context(), connectFlow, state, f); err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable; reload this page in a moment.")
		return
	}
	http.SetCookie(w, m.cookie(st, flowCookieName(state), binder, flowTTL, http.SameSiteLaxMode))
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", res.resource)}
	if res.audience != "" {
		opts = append(opts, oauth2.SetAuthURLParam("audience", res.audience))
	}
	http.Redirect(w, r, res.oauth.AuthCodeURL(state, opts...), http.StatusFound)
}

// callback is the authorization server's redirect: the state names the
// flow, the cookie proves this browser started it.
func (m *Manager) callback(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	q := r.URL.Query()
	state, f, ok := openFlow[flow](m, w, r, connectFlow, "Nothing was connected",
		"This answer from the authorization server matches no connection in progress (it expired or was used).")
	if !ok {
		return
	}
	c, err := r.Cookie(m.cookieName(st, flowCookieName(state)))
	if err != nil || digest(c.Value) != f.Binder {
		m.countConnect(f.Server, "mismatch")
		m.audit.Warn("upstream connect refused: the callback reached another browser", zap.String("server", f.Server), zap.String("principal", f.Principal))
		page(w, http.StatusForbidden, "Nothing was connected", "This browser did not start this connection. Nothing was connected.")
		return
	}
	m.spendFlow(w, r, st, connectFlow, state, flowCookieName(state))
	if e := q.Get("error"); e != "" {
		m.countConnect(f.Server, "denied")
		m.audit.Info("upstream connect declined at the authorization server", zap.String("server", f.Server), zap.String("principal", f.Principal), zap.String("reason", safeCode(e)))
		page(w, http.StatusOK, "Not connected", fmt.Sprintf("The authorization server answered %q: %s was not connected.", safeCode(e), f.Server))
		return
	}
	u, _ := m.upstream(f.Server)
	var res *resolved
	if u != nil {
		res, err = m.resolve(r.Context(), u, st)
	}
	if u == nil || err != nil || res.issuer != f.Issuer {
		page(w, http.StatusConflict, "Nothing was connected", "The server's settings changed while you were connecting. Try again.")
		return
	}
	hctx := context.WithValue(r.Context(), oauth2.HTTPClient, m.hc)
	t, err := res.oauth.Exchange(hctx, q.Get("code"), oauth2.VerifierOption(f.Verifier), oauth2.SetAuthURLParam("resource", res.resource))
	if err != nil {
		m.countConnect(f.Server, "error")
		m.audit.Warn("upstream connect failed: the code exchange was refused", zap.String("server", f.Server), zap.String("principal", f.Principal), zap.String("reason", oauthReason(err)))
		page(w, http.StatusBadGateway, "Nothing was connected", "The authorization server refused to complete the connection ("+oauthReason(err)+"). Try again.")
		return
	}
	if err := m.vault.put(r.Context(), f.Principal, f.Server, f.Issuer, fromOAuth(t, nil)); err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable; nothing was connected.")
		return
	}
	m.forgetLink(f.Principal, f.Server)
	m.countConnect(f.Server, "connected")
	m.audit.Info("upstream connected", zap.String("server", f.Server), zap.String("principal", f.Principal))
	page(w, http.StatusOK, "Connected to "+f.Server, "Connected to "+f.Server+". You can close this tab and go back to your assistant.")
}

func (m *Manager) forgetLink(principal, server string) {
	m.mu.Lock()
	delete(m.links, entryKey(principal, server))
	m.mu.Unlock()
}

// Connection is one of a caller's connections as /connect/ lists it.
type Connection struct {
	Server    string    `json:"server"`
	State     string    `json:"state"` // connected, expired, not_connected, unavailable
	Connected time.Time `json:"connected_at,omitzero"`
	Expires   time.Time `json:"expires_at,omitzero"`
}

// connections lists every server with oauth for principal.
func (m *Manager) connections(ctx context.Context, principal string) []Connection {
	st := m.cfg.Load()
	var out []Connection
	for _, name := range sortedNames(st.servers) {
		c := Connection{Server: name, State: "not_connected"}
		u, _ := m.upstream(name)
		res, err := m.resolve(ctx, u, st)
		var tok *Token
		if err == nil {
			tok, err = m.vault.get(ctx, principal, name, res.issuer)
		}
		switch {
		case err != nil:
			c.State = "unavailable"
		case tok != nil:
			c.State, c.Connected, c.Expires = stateConnected, tok.Created, tok.Expiry
			if !tok.Expiry.IsZero() && time.Now().After(tok.Expiry) && tok.Refresh == "" {
				c.State = stateExpired
			}
		}
		out = append(out, c)
	}
	return out
}

func (m *Manager) list(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	who, ok := m.whoami(r)
	if !ok {
		if wantsJSON(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			jsonAnswer(w, http.StatusUnauthorized, map[string]string{"error": "authenticate with the token you call the gateway with"})
			return
		}
		m.askSignIn(w, r, st, connectPath+"/")
		return
	}
	conns := m.connections(r.Context(), who)
	if wantsJSON(r) {
		jsonAnswer(w, http.StatusOK, map[string]any{"principal": who, "connections": conns})
		return
	}
	listPage(w, who, conns)
}

// start mints a connect link for the signed-in caller and follows it.
func (m *Manager) start(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	who, ok := m.whoami(r)
	if !ok || !sameOrigin(r, st) {
		page(w, http.StatusUnauthorized, "Sign in first", "Open /connect/ and sign in.")
		return
	}
	server := r.PostFormValue("server")
	if st.servers[server] == nil {
		page(w, http.StatusNotFound, "Unknown server", "No server with oauth is called that.")
		return
	}
	err := m.connectRequired(r.Context(), st, server, who, "asked")
	var cr *agents.ConnectRequired
	if !errors.As(err, &cr) {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable.")
		return
	}
	http.Redirect(w, r, strings.TrimPrefix(cr.URL, st.publicURL), http.StatusSeeOther)
}

// revoke forgets the caller's connection to a server (and asks the
// authorization server to revoke the tokens, RFC 7009, where it can).
func (m *Manager) revoke(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	who, ok := m.whoami(r)
	if !ok || !sameOrigin(r, st) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		jsonAnswer(w, http.StatusUnauthorized, map[string]string{"error": "authenticate with the token you call the gateway with"})
		return
	}
	server := r.PostFormValue("server")
	u, _ := m.upstream(server)
	if u == nil {
		jsonAnswer(w, http.StatusNotFound, map[string]string{"error": "no server with oauth is called that"})
		return
	}
	res, err := m.resolve(r.Context(), u, st)
	if err == nil {
		var tok *Token
		if tok, err = m.vault.get(r.Context(), who, server, res.issuer); err == nil && tok != nil {
			m.revokeAt(r.Context(), res, tok)
			err = m.vault.put(r.Context(), who, server, res.issuer, nil)
		}
	}
	if err != nil {
		jsonAnswer(w, http.StatusServiceUnavailable, map[string]string{"error": "the connection could not be revoked now; try again"})
		return
	}
	m.forgetLink(who, server)
	m.countConnect(server, "revoked")
	m.audit.Info("upstream connection revoked", zap.String("server", server), zap.String("principal", who))
	if wantsJSON(r) {
		jsonAnswer(w, http.StatusOK, map[string]string{"server": server, "state": "not_connected"})
		return
	}
	http.Redirect(w, r, connectPath+"/", http.StatusSeeOther)
}

// revokeAt asks the authorization server to revoke tok's refresh token
// (and with it, at most servers, its access tokens); best effort.
func (m *Manager) revokeAt(ctx context.Context, res *resolved, tok *Token) {
	if res.revocation == "" {
		return
	}
	t := tok.Refresh
	hint := "refresh_token"
	if t == "" {
		t, hint = tok.Access, "access_token"
	}
	form := strings.NewReader("token=" + urlEscape(t) + "&token_type_hint=" + hint)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, res.revocation, form)
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res.oauth.ClientSecret != "" {
		req.SetBasicAuth(urlEscape(res.oauth.ClientID), urlEscape(res.oauth.ClientSecret))
	} else {
		form = strings.NewReader("token=" + urlEscape(t) + "&token_type_hint=" + hint + "&client_id=" + urlEscape(res.oauth.ClientID))
		req.Body = io.NopCloser(form)
		req.ContentLength = int64(form.Len())
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		m.log.Info("revoking at the authorization server failed; the gateway forgot the tokens anyway", zap.String("issuer", res.issuer))
		return
	}
	resp.Body.Close()
}
