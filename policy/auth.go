package policy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Inbound authentication modes (auth.mode).
const (
	ModePassthrough = "passthrough"
	ModeTokens      = "tokens"
	ModeJWT         = "jwt" // identity provider tokens (JWTVerifier), static tokens beside them
)

// Reasons of an authentication check. They are bounded and may be used as
// metric labels or audit reasons; none holds request data.
const (
	AuthOK               = "ok"
	AuthPassthrough      = "passthrough"
	AuthMissingToken     = "missing_token"         // 401: no "Authorization: Bearer <token>"
	AuthMissingScheme    = "missing_bearer_scheme" // 401: an Authorization header whose scheme is not Bearer (a bare token, Basic …)
	AuthInvalidToken     = "invalid_token"         // 401: bearer matches no configured token
	AuthAgentNotAllowed  = "agent_not_allowed"     // 403: token's agents globs exclude the agent
	AuthAdminNotLoopback = "not_loopback"          // 403: admin without token from a non-loopback peer
	AuthAdminProxied     = "proxied"               // 403: admin without token, relayed by a proxy
	AuthAdminHost        = "not_loopback_host"     // 403: admin without token, Host is not a loopback name (DNS rebinding)
)

const sha256Prefix = "sha256:"

// Anonymous is how logs and quota buckets name a caller with no identity
// (passthrough mode).
const Anonymous = "anonymous"

// TokenSpec is one configured caller token (auth.tokens[]).
type TokenSpec struct {
	Name   string   // the caller identity in logs, metrics and policy
	Token  string   // the plain token, or "sha256:<64 hex digits>" of it
	Agents []string // globs of agents this caller may use; empty means all
}

type credential struct {
	name   string
	digest [sha256.Size]byte
	agents Globs // empty = all
}

// Authenticator checks inbound callers ("Inbound"). It is immutable
// and safe for concurrent use.
type Authenticator struct {
	mode  string
	creds []credential
	jwt   *JWTVerifier // mode jwt
}

// NewAuthenticator builds an Authenticator. mode "" means passthrough. In
// tokens mode at least one token is required; every token needs a unique
// name and a non-empty, unique value, and a sha256: value must be 64 hex
// digits. Tokens are checked in passthrough mode too but not used. Errors
// name the token by its name or index, never by its value.
func NewAuthenticator(mode string, tokens []TokenSpec) (*Authenticator, error) {
	if mode == "" {
		mode = ModePassthrough
	}
	if mode != ModePassthrough && mode != ModeTokens && mode != ModeJWT {
		return nil, fmt.Errorf("auth.mode: unknown mode %q (want %q, %q or %q)", mode, ModePassthrough, ModeTokens, ModeJWT)
	}
	a := &Authenticator{mode: mode}
	var errs []error
	names := make(map[string]bool)
	digests := make(map[[sha256.Size]byte]string)
	for i, t := range tokens {
		label := fmt.Sprintf("auth.tokens[%d]", i)
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name is required", label))
		} else {
			label = fmt.Sprintf("auth.tokens[%d] (%s)", i, t.Name)
			if names[t.Name] {
				errs = append(errs, fmt.Errorf("%s: duplicate name", label))
			}
			names[t.Name] = true
		}
		digest, err := tokenDigest(t.Token)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: token: %w", label, err))
		} else if prev, dup := digests[digest]; dup {
			errs = append(errs, fmt.Errorf("%s: token: same token as %s", label, prev))
		} else {
			digests[digest] = label
		}
		agents, err := CompileGlobs(t.Agents)
		if err != nil {
			errs = append(errs, prefixErrs(label+": agents: ", err)...)
		}
		a.creds = append(a.creds, credential{name: t.Name, digest: digest, agents: agents})
	}
	if mode == ModeTokens && len(tokens) == 0 {
		errs = append(errs, errors.New("auth.tokens: mode tokens needs at least one token"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if mode == ModePassthrough {
		a.creds = nil
	}
	return a, nil
}

// tokenDigest returns the SHA-256 of a plain token, or decodes the digest of
// a "sha256:<hex>" token. Errors never contain the token.
func tokenDigest(token string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if token == "" {
		return d, errors.New("empty")
	}
	hexPart, isHash := strings.CutPrefix(token, sha256Prefix)
	if !isHash {
		return sha256.Sum256([]byte(token)), nil
	}
	b, err := hex.DecodeString(hexPart)
	if err != nil || len(b) != sha256.Size {
		return d, fmt.Errorf("%s form needs %d hex digits", sha256Prefix, 2*sha256.Size)
	}
	copy(d[:], b)
	return d, nil
}

// NewJWTAuthenticator is NewAuthenticator for mode jwt: tokens are the
// static tokens accepted beside v's (service callers).
func NewJWTAuthenticator(v *JWTVerifier, tokens []TokenSpec) (*Authenticator, error) {
	a, err := NewAuthenticator(ModeJWT, tokens)
	if err != nil {
		return nil, err
	}
	a.jwt = v
	return a, nil
}

// Mode returns ModePassthrough, ModeTokens or ModeJWT.
func (a *Authenticator) Mode() string { return a.mode }

// JWT is the verifier of mode jwt, or nil.
func (a *Authenticator) JWT() *JWTVerifier { return a.jwt }

// Identity is who is calling. Caller is the token name of a static token,
// the identity claim of a JWT, and "" when unknown (passthrough mode; a
// toolbox may later learn an agent_id).
type Identity struct {
	Caller        string
	Authenticated bool
	// Claims are a JWT caller's verified claims (nil for other callers).
	Claims Claims
	// Rule is the policy.callers rule whose match the claims met, "" when
	// none did (CallerPolicy.MatchRule).
	Rule string
}

// QuotaKey is whom a caller's quota counters belong to (its identity; one
// shared bucket for anonymous callers) and label the bounded name of its
// rule, for metrics and messages.
func (id Identity) QuotaKey() (key, label string) {
	label = id.PolicyKey()
	if label == jwtDefault || label == "" {
		label = "default"
	}
	if key = id.Principal(); key == "" {
		key = Anonymous
	}
	return key, label
}

// Principal tells one authenticated caller from another: "token:" and the
// name of its static token, or "jwt:" and a JWT's identity claim (the
// prefixes keep a token named "jwt:alice" from being the JWT user alice);
// "" for an anonymous caller (passthrough mode). Unlike PolicyKey, two JWT
// users whose claims meet the same rule have two principals. What belongs
// to one caller (its quota counters, a task it created, the requestState
// of its call) is bound to this.
func (id Identity) Principal() string {
	switch {
	case id.Claims != nil:
		return "jwt:" + id.Caller
	case id.Caller != "":
		return "token:" + id.Caller
	}
	return ""
}

// jwtDefault is the policy key of a JWT caller no rule matched: no
// configured caller name can equal it, so policy.default applies.
const jwtDefault = "\x00jwt"

// PolicyKey is the name policy.callers rules are looked up by: the rule a
// JWT caller's claims matched, the token name of a static-token caller.
// A JWT caller is never given a rule by its identity claim alone.
func (id Identity) PolicyKey() string {
	switch {
	case id.Rule != "":
		return id.Rule
	case id.Claims != nil:
		return jwtDefault
	}
	return id.Caller
}

// Check authenticates r for agent. status is 0 when the request may go on,
// else 401 or 403; reason is one of the Auth* constants. Passthrough mode
// always passes with an empty Identity. On 403 the Identity is returned
// too, so the refusal can be audited under the caller's name. The token is compared against every
// configured token in constant time: the candidate is hashed and digests of
// equal length are compared, so neither its length nor which token matched
// leaks through timing.
func (a *Authenticator) Check(r *http.Request, agent string) (Identity, int, string) {
	id, status, reason, _ := a.CheckFor(r, agent, "")
	return id, status, reason
}

// CheckFor is Check for the resource the request is for (the agent's
// canonical URL, a JWT's default audience). err says why a JWT was
// refused, for the log; it never holds the token.
func (a *Authenticator) CheckFor(r *http.Request, agent, resource string) (Identity, int, string, error) {
	if a.mode == ModePassthrough {
		return Identity{}, 0, AuthPassthrough, nil
	}
	token, reason := bearerToken(r)
	if reason != "" {
		return Identity{}, http.StatusUnauthorized, reason, nil
	}
	c, ok := match(a.creds, token)
	if !ok && a.jwt != nil {
		claims, caller, reason, err := a.jwt.Verify(r.Context(), token, resource)
		if err != nil {
			return Identity{}, http.StatusUnauthorized, reason, err
		}
		id := Identity{Caller: caller, Authenticated: true, Claims: claims}
		if missing := MissingScopes(claims, a.jwt.RequiredScopes(agent)); len(missing) > 0 {
			return id, http.StatusForbidden, AuthMissingScope, fmt.Errorf("the token lacks scopes %s", strings.Join(missing, " "))
		}
		return id, 0, AuthOK, nil
	}
	if !ok {
		return Identity{}, http.StatusUnauthorized, AuthInvalidToken, nil
	}
	id := Identity{Caller: c.name, Authenticated: true}
	if !c.agents.Empty() && !c.agents.Match(agent) {
		return id, http.StatusForbidden, AuthAgentNotAllowed, nil
	}
	return id, 0, AuthOK, nil
}

// AllowAgent applies what CheckFor applies of id's credential to one agent
// once id is authenticated: a static token's agents globs, a JWT's scopes
// for the agent. It is for agents run on id's behalf by another agent
// (chain, router, parallel, an llm agent's agents). Passthrough mode and an
// anonymous identity have no credential rules. The reason is an Auth*
// constant.
func (a *Authenticator) AllowAgent(id Identity, agent string) Decision {
	switch {
	case a.mode == ModePassthrough || !id.Authenticated:
		return Decision{Allowed: true, Reason: AuthOK}
	case id.Claims != nil:
		if a.jwt != nil && len(MissingScopes(id.Claims, a.jwt.RequiredScopes(agent))) > 0 {
			return Decision{Reason: AuthMissingScope, Rule: AuthRule(id, AuthMissingScope)}
		}
		return Decision{Allowed: true, Reason: AuthOK}
	}
	for i := range a.creds {
		if c := &a.creds[i]; c.name == id.Caller && !c.agents.Empty() && !c.agents.Match(agent) {
			return Decision{Reason: AuthAgentNotAllowed, Rule: AuthRule(id, AuthAgentNotAllowed)}
		}
	}
	return Decision{Allowed: true, Reason: AuthOK}
}

// AuthRule is the config path behind an authentication refusal with
// reason, for the audit line: a static token's agents globs, the JWT
// scopes, else auth.mode itself (no or a bad credential).
func AuthRule(id Identity, reason string) string {
	switch {
	case reason == AuthOK:
		return ""
	case reason == AuthAgentNotAllowed && id.Claims == nil:
		return "auth.tokens." + id.Caller + ".agents"
	case reason == AuthMissingScope:
		return "auth.jwt.scopes"
	}
	return "auth.mode"
}

// match finds the credential whose digest equals the candidate's, looking at
// every credential whatever the outcome.
func match(creds []credential, token string) (*credential, bool) {
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range creds {
		if subtle.ConstantTimeCompare(d[:], creds[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	return &creds[found], true
}

// bearerToken returns the token of a single "Authorization: Bearer <token>"
// header; the scheme is case-insensitive (RFC 7235). reason is "" when
// there is one, AuthMissingScheme for a header that has a value but not
// the Bearer scheme ("Authorization: <token>", Basic), else
// AuthMissingToken.
func bearerToken(r *http.Request) (token, reason string) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", AuthMissingToken
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
	switch {
	case scheme == "":
		return "", AuthMissingToken
	case !ok && strings.EqualFold(scheme, "Bearer"):
		return "", AuthMissingToken // "Bearer" alone
	case !ok || !strings.EqualFold(scheme, "Bearer"):
		return "", AuthMissingScheme
	}
	if token = strings.TrimSpace(token); token == "" {
		return "", AuthMissingToken
	}
	return token, ""
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the Identity in ctx, or the zero Identity.
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// CallerFrom is the policy key (Identity.PolicyKey) of the caller the auth
// middleware stored in ctx.
func CallerFrom(ctx context.Context) string { return IdentityFrom(ctx).PolicyKey() }

// DenyFunc writes the answer to a refused request. reason is a bounded
// Auth* constant, safe to log or show.
type DenyFunc func(w http.ResponseWriter, r *http.Request, status int, reason string)

// defaultDeny answers with the status text only.
func defaultDeny(w http.ResponseWriter, _ *http.Request, status int, _ string) {
	http.Error(w, http.StatusText(status), status)
}

// Middleware authenticates every request for the agent agentOf names and
// puts the Identity in the request context. A refused request gets
// WWW-Authenticate (on 401: `Bearer realm="pallasgw"`, plus
// error="invalid_token" when a bearer was given but is wrong) and is handed
// to onDeny (nil: a plain-text status answer); next is not called. In tokens
// mode the caller's Authorization header is removed from the request passed
// on, so the gateway's own token cannot travel downstream by any path.
// agentOf must not be nil.
func (a *Authenticator) Middleware(agentOf func(*http.Request) string, onDeny DenyFunc) func(http.Handler) http.Handler {
	if agentOf == nil {
		panic("policy: Authenticator.Middleware: agentOf is nil")
	}
	if onDeny == nil {
		onDeny = defaultDeny
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, status, reason := a.Check(r, agentOf(r))
			if status != 0 {
				setChallenge(w, status, reason)
				onDeny(w, r, status, reason)
				return
			}
			r = r.WithContext(WithIdentity(r.Context(), id))
			if a.mode != ModePassthrough && id.Claims == nil {
				r.Header = r.Header.Clone()
				r.Header.Del("Authorization")
			}
			next.ServeHTTP(w, r)
		})
	}
}

func setChallenge(w http.ResponseWriter, status int, reason string) {
	if status != http.StatusUnauthorized {
		return
	}
	challenge := `Bearer realm="pallasgw"`
	if reason == AuthInvalidToken {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
}
