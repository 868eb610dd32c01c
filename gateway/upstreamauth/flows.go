package upstreamauth

// Flows in progress: a connection (connect.go) and jwt mode's sign-in
// (login.go) each keep, from the browser's departure to the provider's
// redirect, a record sealed under its OAuth state (the state is the
// additional data: a record moved to another state does not open), bound
// to the browser by a cookie that holds the binder whose digest the record
// keeps. The callbacks read it back the same way.

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// flowKind names one kind of flow: the additional data's kind and the
// store's key of a state.
type flowKind struct {
	aad string
	key func(state string) string
}

var (
	connectFlow = flowKind{aad: "flow", key: flowKey}
	loginFlows  = flowKind{aad: "login", key: loginKey}
)

// saveFlow seals f under state, for flowTTL.
func (m *Manager) saveFlow(ctx context.Context, kind flowKind, state string, f any) error {
	plain, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return m.kv.Set(ctx, kind.key(state), m.vault.sealer.seal(plain, aad(kind.aad, "", "", state)), flowTTL)
}

// openFlow reads the flow of kind that the callback r names by its state,
// opens it and decodes it. When there is none it answers r itself: 503
// while the store cannot be read; 400, titled title and saying none, when
// no flow in progress has that state (it expired, was spent, or does not
// open); ok is false then.
func openFlow[T any](m *Manager, w http.ResponseWriter, r *http.Request, kind flowKind, title, none string) (state string, f T, ok bool) {
	state = r.URL.Query().Get("state")
	raw, err := m.kv.Get(r.Context(), kind.key(state))
	if err != nil {
		page(w, http.StatusServiceUnavailable, "Try again", "The gateway's session store is unavailable.")
		return state, f, false
	}
	plain, _, err := m.vault.sealer.open(raw, aad(kind.aad, "", "", state))
	if state == "" || len(raw) == 0 || err != nil || json.Unmarshal(plain, &f) != nil {
		page(w, http.StatusBadRequest, title, none)
		return state, f, false
	}
	return state, f, true
}

// spendFlow deletes the flow under state (single use) and the browser's
// cookie that bound it.
func (m *Manager) spendFlow(w http.ResponseWriter, r *http.Request, st *settings, kind flowKind, state, cookie string) {
	_ = m.kv.Set(r.Context(), kind.key(state), nil, time.Millisecond)
	http.SetCookie(w, m.cookie(st, cookie, "", -1, http.SameSiteLaxMode))
}
