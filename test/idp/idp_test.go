package idp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subjectIdP is a stand-in for the inbound IdP: a signer whose JWKS is
// served over HTTP.
func subjectIdP(t *testing.T) (*Signer, string) {
	t.Helper()
	s, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, s.JWKS()) }))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func subjectToken(t *testing.T, s *Signer, iss, sub string, ttl time.Duration) string {
	t.Helper()
	now := time.Now()
	tok, err := s.Sign("JWT", Claims{"iss": iss, "sub": sub, "aud": []string{"gw"}, "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestExchangeServer(t *testing.T) {
	idpSigner, jwksURL := subjectIdP(t)
	x, err := NewExchangeServer(ExchangeConfig{Clients: map[string]string{"pallasgw": "s3cret:+/"}, SubjectJWKS: jwksURL,
		SubjectIssuer: "https://idp.test", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(x)
	defer srv.Close()
	x.cfg.Issuer = srv.URL
	ctx := context.Background()
	subject := subjectToken(t, idpSigner, "https://idp.test", "alice", time.Hour)
	form := func(kv ...string) url.Values {
		v := url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {subject}, "subject_token_type": {TokenTypeAccessToken}}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				v.Del(kv[i])
			} else {
				v.Add(kv[i], kv[i+1])
			}
		}
		return v
	}

	for _, post := range []bool{false, true} {
		code, out, err := ExchangeRequest(ctx, srv.URL+"/token", "pallasgw", "s3cret:+/", post,
			form("audience", "billing", "resource", "http://billing:8000/mcp", "scope", "billing.read"))
		if err != nil || code != 200 {
			t.Fatalf("post=%v: %d %v %v", post, code, out, err)
		}
		if out["token_type"] != "Bearer" || out["issued_token_type"] != TokenTypeAccessToken || out["expires_in"] != float64(60) || out["scope"] != "billing.read" {
			t.Errorf("answer %v", out)
		}
		tok := out["access_token"].(string)
		ks := &KeySet{URL: srv.URL + "/jwks.json"}
		c, err := ks.Verify(ctx, tok, 0)
		if err != nil {
			t.Fatalf("issued token does not verify against /jwks.json: %v", err)
		}
		if c.String("sub") != "alice" || c.String("iss") != srv.URL || c.String("client_id") != "pallasgw" ||
			!slices.Equal(c.Strings("aud"), []string{"billing", "http://billing:8000/mcp"}) || c.String("scope") != "billing.read" {
			t.Errorf("issued claims %v", c)
		}
		if act, _ := c["act"].(map[string]any); act["sub"] != "pallasgw" {
			t.Errorf("act %v", c["act"])
		}
		if h, _, _ := Decode(tok); h["typ"] != "at+jwt" {
			t.Errorf("header %v", h)
		}
	}
	if st := x.Stats(); st.Exchanges != 2 || st.Recent[1].Subject != "alice" || st.Recent[1].Audience[0] != "billing" {
		t.Errorf("stats %+v", st)
	}

	other, _ := NewSigner() // same claims, a key the IdP never published
	hs := strings.Split(subject, ".")
	none := b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + hs[1] + "."
	for _, c := range []struct {
		name, client, secret string
		form                 url.Values
		code                 int
		err                  string
	}{
		{"bad secret", "pallasgw", "nope", form("audience", "b"), 401, "invalid_client"},
		{"unknown client", "mallory", "s3cret:+/", form("audience", "b"), 401, "invalid_client"},
		{"wrong grant", "pallasgw", "s3cret:+/", form("grant_type", "", "grant_type", "client_credentials", "audience", "b"), 400, "unsupported_grant_type"},
		{"no subject token", "pallasgw", "s3cret:+/", form("subject_token", "", "audience", "b"), 400, "invalid_request"},
		{"no subject type", "pallasgw", "s3cret:+/", form("subject_token_type", "", "audience", "b"), 400, "invalid_request"},
		{"odd subject type", "pallasgw", "s3cret:+/", form("subject_token_type", "", "subject_token_type", "urn:x", "audience", "b"), 400, "invalid_request"},
		{"no target", "pallasgw", "s3cret:+/", form(), 400, "invalid_target"},
		{"relative resource", "pallasgw", "s3cret:+/", form("resource", "billing"), 400, "invalid_target"},
		{"foreign key", "pallasgw", "s3cret:+/", form("subject_token", "", "subject_token", subjectToken(t, other, "https://idp.test", "alice", time.Hour), "audience", "b"), 400, "invalid_request"},
		{"alg none", "pallasgw", "s3cret:+/", form("subject_token", "", "subject_token", none, "audience", "b"), 400, "invalid_request"},
		{"expired", "pallasgw", "s3cret:+/", form("subject_token", "", "subject_token", subjectToken(t, idpSigner, "https://idp.test", "alice", -time.Minute), "audience", "b"), 400, "invalid_request"},
		{"wrong issuer", "pallasgw", "s3cret:+/", form("subject_token", "", "subject_token", subjectToken(t, idpSigner, "https://evil.test", "alice", time.Hour), "audience", "b"), 400, "invalid_request"},
	} {
		code, out, err := ExchangeRequest(ctx, srv.URL+"/token", c.client, c.secret, false, c.form)
		if err != nil || code != c.code || out["error"] != c.err {
			t.Errorf("%s: %d %v %v, want %d %s", c.name, code, out, err, c.code, c.err)
		}
	}
	if st := x.Stats(); st.Exchanges != 2 || st.Refused != 12 {
		t.Errorf("stats after refusals: %d exchanges, %d refused", st.Exchanges, st.Refused)
	}
	resp, err := http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Exchanges != 2 {
		t.Errorf("GET /stats: %+v", st)
	}
	for _, e := range st.Errors {
		if strings.Contains(e, subject) {
			t.Errorf("a refusal reason carries the subject token: %q", e)
		}
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestWhoami(t *testing.T) {
	signer, jwksURL := subjectIdP(t)
	w := NewWhoami(&KeySet{URL: jwksURL})
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	tok := subjectToken(t, signer, "https://idp.test", "alice", time.Hour)

	call := func(b bearer) Identity {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: b}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
		if err != nil || res.IsError {
			t.Fatalf("whoami: %v %+v", err, res)
		}
		var id Identity
		b2, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b2, &id); err != nil {
			t.Fatal(err)
		}
		if echo, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil || echo.IsError {
			t.Fatalf("echo: %v %+v", err, echo)
		}
		return id
	}
	id := call(bearer(tok))
	if id.Authorization != "bearer" || !id.Verified || id.Sub != "alice" || id.Iss != "https://idp.test" || !slices.Equal(id.Aud, []string{"gw"}) || id.Fingerprint != tok[len(tok)-8:] {
		t.Errorf("identity %+v", id)
	}
	if id := call(""); id.Authorization != "none" {
		t.Errorf("no bearer: %+v", id)
	}
	seen := w.Seen()
	if !slices.Contains(seen, "Bearer "+tok) || !slices.Contains(seen, "") {
		t.Errorf("Seen has %d values, want the bearer and empty ones", len(seen))
	}
}
