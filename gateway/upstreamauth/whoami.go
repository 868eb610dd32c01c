package upstreamauth

// Who a browser on the connect pages is: the caller's own credential
// (Authorization on the request), else the sign-in cookie this package
// set after the person proved it (tokens mode: the caller's token typed
// into the sign-in form).

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pallasgw/pallasgw/policy"
)

const (
	flowCookie = "pallasgw-connect"
	whoCookie  = "pallasgw-signin"
	whoTTL     = time.Hour
	// csrfCookie guards the sign-in form: a form posted from another site
	// (which would sign the browser in as someone else, whose link it
	// could then be made to open) comes without it (SameSite=Strict).
	csrfCookie = "pallasgw-csrf"
	csrfTTL    = 10 * time.Minute
)

// signedIn is the sign-in cookie's sealed content.
type signedIn struct {
	Principal string `json:"p"`
	Expires   int64  `json:"e"`
}

// whoami is the principal the request proves, if any.
func (m *Manager) whoami(r *http.Request) (string, bool) {
	st := m.cfg.Load()
	if r.Header.Get("Authorization") != "" && st.auth != nil {
		id, status, reason, _ := st.auth.CheckFor(r, "", "")
		if id.Authenticated && (status == 0 || reason == policy.AuthAgentNotAllowed) && id.Principal() != "" {
			return id.Principal(), true
		}
		return "", false
	}
	c, err := r.Cookie(m.cookieName(st, whoCookie))
	if err != nil {
		return "", false
	}
	sealed, err := base64URL(c.Value)
	if err != nil {
		return "", false
	}
	plain, _, err := m.vault.sealer.open(sealed, aad("signin", "", "", ""))
	var s signedIn
	if err != nil || json.Unmarshal(plain, &s) != nil || time.Now().Unix() > s.Expires || s.Principal == "" {
		return "", false
	}
	return s.Principal, true
}

// askSignIn asks the person to prove who they are, then come back to
// next: in tokens mode with their token, in jwt mode by an OpenID login at
// the gateway's issuer (login.go).
func (m *Manager) askSignIn(w http.ResponseWriter, r *http.Request, st *settings, next string) {
	switch st.mode {
	case policy.ModeTokens:
		m.signInForm(w, st, http.StatusOK, next, "")
		return
	case policy.ModeJWT:
		http.Redirect(w, r, loginPath+"?next="+url.QueryEscape(next), http.StatusFound)
		return
	}
	page(w, http.StatusUnauthorized, "Sign in first",
		"Open this page with your gateway credential (Authorization: Bearer) to prove who you are.")
}

// signin takes the caller's token from the sign-in form (tokens mode).
func (m *Manager) signin(w http.ResponseWriter, r *http.Request) {
	st := m.cfg.Load()
	next := safeNext(r.PostFormValue("next"))
	if !sameOrigin(r, st) || st.auth == nil || st.mode != policy.ModeTokens {
		page(w, http.StatusForbidden, "Cannot sign in here", "Sign in is by token in auth mode tokens only.")
		return
	}
	if c, err := r.Cookie(m.cookieName(st, csrfCookie)); err != nil || c.Value == "" ||
		subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		m.signInForm(w, st, http.StatusForbidden, next, "This form expired or was sent from another site.")
		return
	}
	probe := r.Clone(r.Context())
	probe.Header = http.Header{"Authorization": {"Bearer " + strings.TrimSpace(r.PostFormValue("token"))}}
	id, status, reason, _ := st.auth.CheckFor(probe, "", "")
	if !id.Authenticated || (status != 0 && reason != policy.AuthAgentNotAllowed) || id.Principal() == "" {
		m.signInForm(w, st, http.StatusUnauthorized, next, "That token is not one of this gateway's.")
		return
	}
	m.signIn(w, st, id.Principal())
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signIn sets the sign-in cookie of principal.
func (m *Manager) signIn(w http.ResponseWriter, st *settings, principal string) {
	plain, _ := json.Marshal(signedIn{Principal: principal, Expires: time.Now().Add(whoTTL).Unix()})
	val := base64URLEncode(m.vault.sealer.seal(plain, aad("signin", "", "", "")))
	http.SetCookie(w, m.cookie(st, whoCookie, val, whoTTL, http.SameSiteLaxMode))
}

// safeNext is where a sign-in may send the browser back to: a connect page.
func safeNext(next string) string {
	if !strings.HasPrefix(next, connectPath+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return connectPath + "/"
	}
	return next
}

// signInForm answers the sign-in form, with a fresh CSRF cookie and field.
func (m *Manager) signInForm(w http.ResponseWriter, st *settings, status int, next, problem string) {
	csrf := randomToken()
	http.SetCookie(w, m.cookie(st, csrfCookie, csrf, csrfTTL, http.SameSiteStrictMode))
	signInPage(w, status, next, csrf, problem)
}

// cookieName is name, as a __Host- cookie when the gateway is served over
// HTTPS (public_url): bound to this host, Secure, Path=/.
func (m *Manager) cookieName(st *settings, name string) string {
	if strings.HasPrefix(st.publicURL, "https://") {
		return "__Host-" + name
	}
	return name
}

func (m *Manager) cookie(st *settings, name, val string, ttl time.Duration, same http.SameSite) *http.Cookie {
	c := &http.Cookie{Name: m.cookieName(st, name), Value: val, Path: "/", HttpOnly: true, SameSite: same,
		Secure: strings.HasPrefix(st.publicURL, "https://"), MaxAge: int(ttl / time.Second)}
	if ttl < 0 {
		c.MaxAge = -1
	}
	return c
}

// sameOrigin refuses a form posted from another site: a request with an
// Origin must come from public_url's. "null" passes: the pages' own forms
// send it (Referrer-Policy: no-referrer), and the cookies (SameSite) and
// the sign-in form's CSRF field are what keep other sites out.
func sameOrigin(r *http.Request, st *settings) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return true
	}
	u, err := url.Parse(st.publicURL)
	return err == nil && strings.EqualFold(o, u.Scheme+"://"+u.Host)
}
