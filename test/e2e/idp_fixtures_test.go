//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/idp"
)

// goTool is a program .ci/install-e2e-tools built from test/tools/<name>
// into $PALLASGW_E2E_TOOLS/bin, or skips (fails under REQUIRE). Only that
// directory: Debian's `hydra` in PATH is a password cracker.
func goTool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(toolsDir(), "bin", name)
	st, err := os.Stat(p)
	if err == nil && (st.IsDir() || st.Mode()&0o111 == 0) {
		err = fmt.Errorf("%s is not an executable", p)
	}
	need(t, name+" (built by .ci/install-e2e-tools from test/tools/"+name+")", err)
	return p
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hydra is one Ory Hydra v2.3.0 (`hydra serve all --dev`): in-memory
// (SQLite) store, public and admin API on 127.0.0.1 ports of the test, JWT
// access tokens, and a token hook (served by the test) that adds a `groups`
// claim per client.
//
// What its client-credentials access tokens carry (checked by
// TestIdentityRig): header {alg: RS256, kid: <uuid>, typ: JWT}, signed by the
// key of /.well-known/jwks.json (made at start: runHydra); claims
//
//	iss        the issuer, exactly urls.self.issuer (no trailing slash)
//	sub        the client id (no user in client_credentials)
//	client_id  the client id
//	aud        always a list: the `audience` form values of the token
//	           request (space-separated or repeated), each of which must be
//	           in the client's `audience` allow-list (else 400
//	           invalid_request); [] when none was asked for
//	scp        always a list: the granted scopes (`scope` request parameter,
//	           each in the client's `scope`, else 400 invalid_scope); Hydra
//	           writes no `scope` string claim
//	exp, iat, nbf, jti
//	ext        the token hook's session.access_token claims ({} without);
//	           the names in oauth2.allowed_top_level_claims (here `groups`)
//	           are also copied to the top level
//
// Client metadata never reaches the token; only the token hook adds claims.
// Discovery: /.well-known/openid-configuration only
// (/.well-known/oauth-authorization-server is 404). No RFC 8693 grant in
// v2.3.0 (grant_types_supported: authorization_code, implicit,
// client_credentials, refresh_token), hence test/idp/tokenexchange.
type hydra struct {
	Issuer string // http://127.0.0.1:<public port>, also its public API
	Admin  string // http://127.0.0.1:<admin port>
	p      *proc

	mu     sync.Mutex
	groups map[string][]string // client id -> the groups claim its tokens get
}

func startHydra(t *testing.T) *hydra {
	t.Helper()
	bin := goTool(t, "hydra")
	h := &hydra{groups: map[string][]string{}}
	hook := httptest.NewServer(http.HandlerFunc(h.tokenHook))
	t.Cleanup(hook.Close)
	ports := freePorts(t, 2)
	h.Issuer = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	h.Admin = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cfg := fmt.Sprintf(`dsn: memory
serve:
  public: {host: 127.0.0.1, port: %d}
  admin: {host: 127.0.0.1, port: %d}
urls:
  self: {issuer: %s}
secrets:
  system: [%q]
strategies:
  access_token: jwt
oauth2:
  token_hook: %s/hook
  allowed_top_level_claims: [groups]
log:
  level: warn
`, ports[0], ports[1], h.Issuer, randomHex(16), hook.URL)
	// oauth2.token_hook cannot be set from the environment (its schema is
	// a oneOf, which the env mapping fails on): a config file it is.
	h.p = runHydra(t, bin, cfg, h.Issuer, h.Admin)
	return h
}

// runHydra runs the Hydra binary bin with the config file cfg and waits
// until its admin API (admin) and its discovery at issuer answer.
func runHydra(t *testing.T, bin, cfg, issuer, admin string) *proc {
	t.Helper()
	path := writeFile(t, t.TempDir(), "hydra.yaml", cfg)
	cmd := exec.Command(bin, "serve", "all", "--dev", "--sqa-opt-out", "--config", path)
	// Hydra also reads its settings from the environment: keep the test's
	// from leaking in (DSN, URLS_*, SERVE_*), keep PATH and HOME.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	p := startProc(t, "hydra", cmd)
	waitFor(t, "hydra to be ready", 30*time.Second, p, func() error {
		if err := httpGetOK(admin + "/health/ready")(); err != nil {
			return err
		}
		return httpGetOK(issuer + "/.well-known/openid-configuration")()
	})
	// Hydra generates its access-token key set on first use, and requests
	// racing there can leave two keys, one signing and the other named in
	// tokens' kid (their signature then fails; ory/hydra#3573): the key set
	// is made before any token.
	req, _ := http.NewRequest(http.MethodPost, admin+"/admin/keys/hydra.jwt.access-token", strings.NewReader(`{"alg":"RS256","use":"sig"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating Hydra's access-token key: %v %v", err, resp)
	}
	resp.Body.Close()
	return p
}

// tokenHook is Hydra's oauth2.token_hook: 200 with a `groups` claim for the
// clients that have one, else 204 (no change).
func (h *hydra) tokenHook(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Request struct {
			ClientID string `json:"client_id"`
		} `json:"request"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	h.mu.Lock()
	groups, ok := h.groups[req.Request.ClientID]
	h.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"session": map[string]any{"access_token": map[string]any{"groups": groups}}})
}

// hydraClient is an OAuth2 client for the client-credentials grant.
type hydraClient struct {
	ID, Secret string
	Scopes     []string // the scopes it may ask for
	Audiences  []string // the audiences it may ask for
	Groups     []string // the `groups` claim of its tokens (token hook); nil: none
	Lifespan   string   // access token lifespan, e.g. "1s"; "" = Hydra's 1h
	// AuthMethod is client_secret_basic (default) or client_secret_post.
	AuthMethod string
}

// createClient registers c with the admin API.
func (h *hydra) createClient(t *testing.T, c hydraClient) {
	t.Helper()
	if c.AuthMethod == "" {
		c.AuthMethod = "client_secret_basic"
	}
	body := map[string]any{
		"client_id": c.ID, "client_secret": c.Secret, "grant_types": []string{"client_credentials"},
		"scope": strings.Join(c.Scopes, " "), "audience": c.Audiences, "token_endpoint_auth_method": c.AuthMethod,
	}
	if c.Lifespan != "" {
		body["client_credentials_grant_access_token_lifespan"] = c.Lifespan
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(h.Admin+"/admin/clients", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating Hydra client %s: %d %s", c.ID, resp.StatusCode, out)
	}
	if c.Groups != nil {
		h.mu.Lock()
		h.groups[c.ID] = c.Groups
		h.mu.Unlock()
	}
}

// tokenRequest asks for a client-credentials token (client_secret_basic)
// and returns the status and the decoded answer.
func (h *hydra) tokenRequest(t *testing.T, c hydraClient, scopes []string, audiences ...string) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if len(audiences) > 0 {
		form.Set("audience", strings.Join(audiences, " "))
	}
	var hdr = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if c.AuthMethod == "client_secret_post" {
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	}
	req, _ := http.NewRequest(http.MethodPost, h.Issuer+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header = hdr
	if c.AuthMethod != "client_secret_post" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("Hydra token answer: %v", err)
	}
	return resp.StatusCode, out
}

// token is a client-credentials access token for c, or fails the test.
func (h *hydra) token(t *testing.T, c hydraClient, scopes []string, audiences ...string) string {
	t.Helper()
	code, out := h.tokenRequest(t, c, scopes, audiences...)
	tok, _ := out["access_token"].(string)
	if code != http.StatusOK || tok == "" {
		t.Fatalf("Hydra token for %s (scopes %v, audience %v): %d %v", c.ID, scopes, audiences, code, out)
	}
	return tok
}

// keys is a verifier for Hydra's tokens, found by OIDC discovery.
func (h *hydra) keys(t *testing.T) *idp.KeySet {
	t.Helper()
	_, _, body := mustGet(t, h.Issuer+"/.well-known/openid-configuration", nil)
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.JWKSURI == "" || doc.Issuer != h.Issuer {
		t.Fatalf("Hydra's discovery document: %v %s", err, body)
	}
	return &idp.KeySet{URL: doc.JWKSURI}
}

var (
	exchangeBinOnce sync.Once
	exchangeBin     string
	exchangeBinErr  error
)

// buildTokenExchange builds test/idp/tokenexchange once per test binary.
func buildTokenExchange(t *testing.T) string {
	t.Helper()
	exchangeBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pallasgw-e2e-tokenexchange")
		if err != nil {
			exchangeBinErr = err
			return
		}
		exchangeBin = filepath.Join(dir, "tokenexchange")
		out, err := exec.Command("go", "build", "-o", exchangeBin, "github.com/pallasgw/pallasgw/test/idp/tokenexchange").CombinedOutput()
		if err != nil {
			exchangeBinErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if exchangeBinErr != nil {
		t.Fatalf("building test/idp/tokenexchange: %v", exchangeBinErr)
	}
	return exchangeBin
}

// exchangeAS is the RFC 8693 token-exchange server (test/idp/tokenexchange)
// run as a process, subject tokens checked against Hydra's keys and issuer.
type exchangeAS struct {
	URL string // its issuer and base URL; token endpoint URL+"/token"
	p   *proc
}

// startExchangeAS runs it with the clients "id:secret,..." (passed in the
// environment, not on the command line).
func startExchangeAS(t *testing.T, h *hydra, clients string) *exchangeAS {
	t.Helper()
	bin := buildTokenExchange(t)
	port := freePorts(t, 1)[0]
	a := &exchangeAS{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	cmd := exec.Command(bin, "-listen", fmt.Sprintf("127.0.0.1:%d", port),
		"-subject-jwks", h.Issuer+"/.well-known/jwks.json", "-subject-issuer", h.Issuer)
	cmd.Env = append(os.Environ(), "TOKENEXCHANGE_CLIENTS="+clients)
	a.p = startProc(t, "tokenexchange", cmd)
	waitFor(t, "the token-exchange server", 30*time.Second, a.p, httpGetOK(a.URL+"/stats"))
	return a
}

// stats reads its counters.
func (a *exchangeAS) stats(t *testing.T) idp.Stats {
	t.Helper()
	code, _, body := mustGet(t, a.URL+"/stats", nil)
	var s idp.Stats
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil {
		t.Fatalf("/stats: %d %v %s", code, err, body)
	}
	return s
}

// startWhoami serves an idp.Whoami on 127.0.0.1 for the test; keys (may be
// nil) verifies the bearers it gets. It returns the server and its MCP URL.
func startWhoami(t *testing.T, keys *idp.KeySet) (*idp.Whoami, string) {
	t.Helper()
	w := idp.NewWhoami(keys)
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	return w, srv.URL + "/mcp"
}

// bearerTransport adds Authorization: Bearer <token> to every request
// ("" adds nothing).
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go SDK client to url with a bearer.
func mcpSession(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-identity", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearerTransport(token)}, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

// mustSession is mcpSession that fails the test.
func mustSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcpSession(t, url, token)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	return cs
}

// toolNames lists the session's tools.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		if tl.Name != "get_health" { // the agent's own tool, listed for every caller
			names = append(names, tl.Name)
		}
	}
	return names
}

// callTool calls a tool; the error is the call's JSON-RPC error, or the
// text of an isError result.
func callTool(cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return res, fmt.Errorf("isError: %s", strings.Join(texts, " "))
	}
	return res, nil
}

// whoamiCall calls a whoami tool and returns what it saw.
func whoamiCall(t *testing.T, cs *mcp.ClientSession, tool string) idp.Identity {
	t.Helper()
	res, err := callTool(cs, tool, nil)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var id idp.Identity
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &id); err != nil || id.Authorization == "" {
		// A proxy may pass the structured content on only as text.
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok && json.Unmarshal([]byte(tc.Text), &id) == nil && id.Authorization != "" {
				return id
			}
		}
		t.Fatalf("%s answered no identity: %s", tool, b)
	}
	return id
}
