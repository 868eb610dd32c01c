//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/idp"
)

// hydraAuthCode is an Ory Hydra for the authorization-code grant: dynamic
// client registration on, JWT access tokens that live ttl, and its login
// and consent URLs answered by an app of the test that accepts every
// challenge, through Hydra's admin API, for the subject the browser names
// in its e2e-subject cookie (the person "signed in" at the provider).
type hydraAuthCode struct {
	Issuer, Admin string
	p             *proc
}

func startHydraAuthCode(t *testing.T, ttl string) *hydraAuthCode {
	return startHydraAuthCodeBehind(t, ttl, nil)
}

// startHydraAuthCodeBehind is startHydraAuthCode with Hydra's public port
// reached through front (nil: directly): its issuer is front's address.
func startHydraAuthCodeBehind(t *testing.T, ttl string, front *tcpProxy) *hydraAuthCode {
	t.Helper()
	bin := goTool(t, "hydra")
	h := &hydraAuthCode{}
	app := httptest.NewServer(http.HandlerFunc(h.loginConsent))
	t.Cleanup(app.Close)
	ports := freePorts(t, 2)
	h.Issuer = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if front != nil {
		front.to(fmt.Sprintf("127.0.0.1:%d", ports[0]))
		h.Issuer = front.URL
	}
	h.Admin = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cfg := fmt.Sprintf(`dsn: memory
serve:
  public: {host: 127.0.0.1, port: %d}
  admin: {host: 127.0.0.1, port: %d}
urls:
  self: {issuer: %s}
  login: %s/login
  consent: %s/consent
secrets:
  system: [%q]
strategies:
  access_token: jwt
oidc:
  dynamic_client_registration:
    enabled: true
webfinger:
  oidc_discovery:
    client_registration_url: %s/oauth2/register
ttl:
  access_token: %s
log:
  level: warn
`, ports[0], ports[1], h.Issuer, app.URL, app.URL, randomHex(16), h.Issuer, ttl)
	h.p = runHydra(t, bin, cfg, h.Issuer, h.Admin)
	return h
}

// loginConsent is the login and consent app.
func (h *hydraAuthCode) loginConsent(w http.ResponseWriter, r *http.Request) {
	admin := func(method, path string, body any) (map[string]any, error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, h.Admin+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
			return nil, fmt.Errorf("%s %s: HTTP %d %v", method, path, resp.StatusCode, out)
		}
		return out, nil
	}
	var out map[string]any
	var err error
	switch r.URL.Path {
	case "/login":
		c, cerr := r.Cookie("e2e-subject")
		if cerr != nil {
			http.Error(w, "nobody is signed in at the provider", http.StatusUnauthorized)
			return
		}
		out, err = admin(http.MethodPut, "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(r.URL.Query().Get("login_challenge")),
			map[string]any{"subject": c.Value})
	case "/consent":
		ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req map[string]any
		if req, err = admin(http.MethodGet, "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil); err == nil {
			out, err = admin(http.MethodPut, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch,
				map[string]any{"grant_scope": req["requested_scope"], "grant_access_token_audience": req["requested_access_token_audience"]})
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, out["redirect_to"].(string), http.StatusFound)
}

// person is someone's browser: signed in at the provider as subject, with
// a cookie jar, following redirects.
func person(t *testing.T, subject string) *http.Client {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse("http://127.0.0.1/")
	jar.SetCookies(u, []*http.Cookie{{Name: "e2e-subject", Value: subject, Path: "/"}})
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func browse(t *testing.T, c *http.Client, method, u string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// csrfOf is the CSRF field of a sign-in page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	v, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 || v == "" {
		t.Fatalf("no CSRF field in the sign-in page: %s", page)
	}
	return v
}

// legacyMCP is a session-based MCP client of one protocol revision,
// speaking JSON-RPC by hand so that the revision is the test's choice.
type legacyMCP struct {
	url, token, version, sid string
	next                     int
	notes                    []string // notifications callAsked saw: method and params
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func openLegacy(t *testing.T, u, token, version string) *legacyMCP {
	return openLegacyCaps(t, u, token, version, map[string]any{})
}

func openLegacyCaps(t *testing.T, u, token, version string, caps map[string]any) *legacyMCP {
	t.Helper()
	s := &legacyMCP{url: u, token: token, version: version}
	s.call(t, "initialize", map[string]any{"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "e2e-oauth", "version": "1"}})
	s.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return s
}

func (s *legacyMCP) post(t *testing.T, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
		req.Header.Set("MCP-Protocol-Version", s.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.url, err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.sid = id
	}
	return resp
}

func (s *legacyMCP) call(t *testing.T, method string, params any) rpcAnswer {
	t.Helper()
	s.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	resp := s.post(t, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				raw = []byte(d)
			}
		}
	}
	var a rpcAnswer
	if err := json.Unmarshal(raw, &a); err != nil || (a.Result == nil && a.Error == nil) {
		t.Fatalf("%s: HTTP %d, not a JSON-RPC answer: %s", method, resp.StatusCode, raw)
	}
	return a
}

// callAsked is call for a request during which the server asks the
// client something (elicitation/create on the call's stream): ask answers
// it, after runs once the answer is posted; the call's own answer is
// returned.
func (s *legacyMCP) callAsked(t *testing.T, method string, params any, ask func(method string, params json.RawMessage) any, after func()) rpcAnswer {
	t.Helper()
	s.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	resp := s.post(t, body)
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: not a stream (the server asked nothing): %s", method, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(d), &msg) != nil {
			continue
		}
		switch {
		case msg.Method != "" && len(msg.ID) > 0: // a request to the client
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": ask(msg.Method, msg.Params)})
			r := s.post(t, answer)
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			if after != nil {
				after()
			}
		case msg.Method != "":
			s.notes = append(s.notes, msg.Method+" "+string(msg.Params))
		case len(msg.ID) > 0:
			var a rpcAnswer
			if err := json.Unmarshal([]byte(d), &a); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			return a
		}
	}
	t.Fatalf("%s: the stream ended without an answer (%v)", method, sc.Err())
	return rpcAnswer{}
}

// modernRound is an input-required round of a 2026-07-28 call.
type modernRound struct {
	url, key string
	state    json.RawMessage
}

// modernPost is one sessionless (2026-07-28) tools/call of whoami, with
// URL-mode elicitation declared, and its JSON-RPC result.
func modernPost(t *testing.T, u, token string, id int, extra map[string]any) map[string]json.RawMessage {
	t.Helper()
	res, rpcErr := modernRequest(t, u, token, id, "tools/call", urlElicitation, extra)
	if res == nil {
		t.Fatalf("2026-07-28 tools/call: %s", rpcErr)
	}
	return res
}

// urlElicitation is the client capabilities of a caller that takes
// URL-mode elicitation.
var urlElicitation = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}

// modernRequest is one sessionless (2026-07-28) request: tools/call (of
// whoami) or tools/list, from a client with caps; its JSON-RPC result, or
// nil and its error.
func modernRequest(t *testing.T, u, token string, id int, method string, caps map[string]any, extra map[string]any) (map[string]json.RawMessage, json.RawMessage) {
	t.Helper()
	params := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-oauth", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
	if method == "tools/call" {
		params["name"], params["arguments"] = "whoami", map[string]any{}
	}
	for k, v := range extra {
		params[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if method == "tools/call" {
		req.Header.Set("Mcp-Name", "whoami")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok && strings.Contains(d, `"id":`) {
				raw = []byte(d)
			}
		}
	}
	var a struct {
		Result map[string]json.RawMessage `json:"result"`
		Error  json.RawMessage            `json:"error"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || (a.Result == nil && a.Error == nil) {
		t.Fatalf("2026-07-28 %s: HTTP %d %s", method, resp.StatusCode, raw)
	}
	return a.Result, a.Error
}

// modernConnectRound calls whoami as a 2026-07-28 caller that declared
// URL-mode elicitation and returns the input-required round's connect URL.
func modernConnectRound(t *testing.T, u, token string) modernRound {
	t.Helper()
	return roundOf(t, modernPost(t, u, token, 1, nil))
}

// roundOf is the URL elicitation of an input-required result.
func roundOf(t *testing.T, res map[string]json.RawMessage) modernRound {
	t.Helper()
	var reqs map[string]struct {
		Method string `json:"method"`
		Params struct{ Mode, URL string }
	}
	if string(res["resultType"]) != `"input_required"` || json.Unmarshal(res["inputRequests"], &reqs) != nil || len(reqs) != 1 {
		t.Fatalf("2026-07-28 caller, not connected: %v", res)
	}
	for k, r := range reqs {
		if r.Method != "elicitation/create" || r.Params.Mode != "url" {
			t.Fatalf("input request %s: %+v", k, r)
		}
		return modernRound{url: r.Params.URL, key: k, state: res["requestState"]}
	}
	return modernRound{}
}

// accepted is the retry of a call that accepts round r.
func accepted(r modernRound) map[string]any {
	extra := map[string]any{"inputResponses": map[string]any{r.key: map[string]any{"action": "accept"}}}
	if len(r.state) > 0 {
		extra["requestState"] = r.state
	}
	return extra
}

// modernRetry answers the round (accept) and returns the subject whoami saw.
func modernRetry(t *testing.T, u, token string, r modernRound) string {
	t.Helper()
	res := modernPost(t, u, token, 2, accepted(r))
	var id idp.Identity
	if err := json.Unmarshal(res["structuredContent"], &id); err != nil {
		t.Fatalf("the retry answered %v", res)
	}
	return id.Sub
}

// tools is the names tools/list answers, without the agent's get_health.
func (s *legacyMCP) tools(t *testing.T) []string {
	t.Helper()
	a := s.call(t, "tools/list", map[string]any{})
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil {
		t.Fatalf("tools/list: %+v %s", a.Error, a.Result)
	}
	var out []string
	for _, tl := range res.Tools {
		if tl.Name != "get_health" {
			out = append(out, tl.Name)
		}
	}
	return out
}

// whoami calls the downstream's whoami: the identity it saw, or the
// answer when the call did not reach it.
func (s *legacyMCP) whoami(t *testing.T) (idp.Identity, rpcAnswer, string) {
	t.Helper()
	a := s.call(t, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var id idp.Identity
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil {
		return id, a, ""
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	if res.IsError || json.Unmarshal(res.StructuredContent, &id) != nil {
		return id, a, strings.Join(texts, " ")
	}
	return id, a, ""
}

// TestUpstreamOAuth: per-caller upstream OAuth for real. The downstream is
// a second pallasgw in auth.mode jwt with Hydra as its issuer (it answers
// 401 with its protected resource metadata), in front of a whoami server
// that verifies Hydra's tokens and reports whose they are. The gateway
// under test (auth.mode tokens, callers alice and bob) discovers Hydra
// from the 401, registers itself dynamically, and alice and bob each
// connect their own account through /connect with a cookie-jar browser;
// Hydra's login and consent are answered by the test. Checked: what an
// unconnected caller gets per protocol (2025-11-25: -32042 with the URL;
// 2025-06-18: a tool error with the URL), that bob's link opened by alice
// connects nothing, that each caller's calls carry its own token, a refresh
// after the short access-token lifetime, revocation, the metrics, and that
// no issued token appears in the logs, /metrics or /-/status.
func TestUpstreamOAuth(t *testing.T) {
	for _, fast := range []string{"on", "off"} {
		t.Run("wire_fast_"+fast, func(t *testing.T) { upstreamOAuth(t, fast) })
	}
}

func upstreamOAuth(t *testing.T, wireFast string) {
	rig := startOAuthRig(t, "8s", nil)
	h, who, down, downURL := rig.hydra, rig.who, rig.down, rig.downURL

	model := fakellm.New(t)
	aliceTok, bobTok, carolTok, daveTok, erinTok := "alice-"+randomHex(12), "bob-"+randomHex(12), "carol-"+randomHex(12), "dave-"+randomHex(12), "erin-"+randomHex(12)
	fayTok, gusTok, halTok := "fay-"+randomHex(12), "gus-"+randomHex(12), "hal-"+randomHex(12)
	gw := startGateway(t, rig.config("e2e-oauth", `
public_url: "http://127.0.0.1:{{PORT}}"
models:
  default: openai.fake-model
  providers:
    openai: {base_url: "`+model.OpenAIBaseURL()+`", api_key: "sk-test", timeout: 60s}`,
		[]string{"alice", "bob", "carol", "dave", "erin", "fay", "gus", "hal"}, `
  desk: {kind: proxy, servers: [team]}
  box: {kind: toolbox, servers: [team]}
  helper: {kind: llm, servers: [team]}`),
		"PALLASGW_WIRE_FAST="+wireFast, "ALICE_TOKEN="+aliceTok, "BOB_TOKEN="+bobTok, "CAROL_TOKEN="+carolTok, "DAVE_TOKEN="+daveTok,
		"ERIN_TOKEN="+erinTok, "FAY_TOKEN="+fayTok, "GUS_TOKEN="+gusTok, "HAL_TOKEN="+halTok, "CREDENTIALS_KEY="+credentialsKey())
	desk := gw.Base + "/agents/desk/mcp"

	// alice, not connected (2025-11-25, no URL-mode elicitation): her
	// tools/list asks her to connect as a call would, -32042 with the URL.
	alice := openLegacy(t, desk, aliceTok, "2025-11-25")
	if a := alice.call(t, "tools/list", map[string]any{}); a.Error == nil || a.Error.Code != -32042 || !strings.Contains(string(a.Error.Data), gw.Base+"/connect/") {
		t.Fatalf("alice lists before connecting: %+v %s", a.Error, a.Result)
	}

	// alice connects from the connect page: sign in with her gateway
	// token, ask to connect team, Hydra's login and consent, the callback.
	aliceBrowser := person(t, "alice")
	code, body := browse(t, aliceBrowser, http.MethodGet, gw.Base+"/connect/", nil)
	if code != http.StatusOK || !strings.Contains(body, `action="/connect/signin"`) {
		t.Fatalf("/connect/ without signing in: %d %s", code, body)
	}
	// A sign-in posted without the form's CSRF field (another site's form)
	// is refused.
	// (The refusal is the form again, with a fresh CSRF field.)
	if code, body = browse(t, aliceBrowser, http.MethodPost, gw.Base+"/connect/signin", url.Values{"token": {aliceTok}, "next": {"/connect/"}}); code != http.StatusForbidden {
		t.Fatalf("sign-in without the CSRF field: %d", code)
	}
	if code, body = browse(t, aliceBrowser, http.MethodPost, gw.Base+"/connect/signin", url.Values{"token": {aliceTok}, "next": {"/connect/"}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK ||
		!strings.Contains(body, "token:alice") || !strings.Contains(body, "not_connected") {
		t.Fatalf("signed in: %d %s", code, body)
	}
	if code, body = browse(t, aliceBrowser, http.MethodPost, gw.Base+"/connect/start", url.Values{"server": {"team"}}); code != http.StatusOK ||
		!strings.Contains(body, "Connected to team") {
		t.Fatalf("alice connects: %d %s", code, body)
	}

	names := alice.tools(t)
	if !strings.Contains(strings.Join(names, ","), "whoami") {
		t.Fatalf("alice lists %v once connected", names)
	}
	id, a, text := alice.whoami(t)
	if !id.Verified || id.Sub != "alice" || id.Iss != h.Issuer || len(id.Aud) != 1 || id.Aud[0] != downURL {
		t.Fatalf("alice's call reached whoami as %+v (answer %+v %s)", id, a.Error, text)
	}

	// bob, 2025-11-25, not connected: -32042 with the URL.
	bob := openLegacy(t, desk, bobTok, "2025-11-25")
	_, a, _ = bob.whoami(t)
	if a.Error == nil || a.Error.Code != -32042 {
		t.Fatalf("bob (2025-11-25, not connected) got %+v %s", a.Error, a.Result)
	}
	var data struct {
		Elicitations []struct{ Mode, URL, ElicitationID string } `json:"elicitations"`
	}
	if json.Unmarshal(a.Error.Data, &data) != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
		!strings.HasPrefix(data.Elicitations[0].URL, gw.Base+"/connect/") {
		t.Fatalf("-32042 data: %s", a.Error.Data)
	}
	bobLink := data.Elicitations[0].URL
	// A session that declared form-mode elicitation only is not sent the
	// URL-mode request: -32042 as well.
	if _, a, _ = openLegacyCaps(t, desk, bobTok, "2025-11-25", map[string]any{"elicitation": map[string]any{}}).whoami(t); a.Error == nil || a.Error.Code != -32042 {
		t.Fatalf("bob (2025-11-25, form-mode elicitation only) got %+v %s", a.Error, a.Result)
	}

	// bob's get_health (the toolbox's: the proxy's is the downstream's own,
	// whose tool shadows it) says why the server's tools are not his yet.
	if a = openLegacy(t, gw.Base+"/agents/box/mcp", bobTok, "2025-11-25").call(t, "tools/call", map[string]any{"name": "get_health", "arguments": map[string]any{}}); a.Error != nil ||
		!strings.Contains(string(a.Result), "needs your own account connected") || !strings.Contains(string(a.Result), gw.Base+"/connect/") {
		t.Fatalf("bob's get_health: %+v %s", a.Error, a.Result)
	}

	// bob, 2025-06-18: a tool error whose text carries the URL; his
	// tools/list, an error whose text carries it.
	bob0618 := openLegacy(t, desk, bobTok, "2025-06-18")
	if _, a, text = bob0618.whoami(t); a.Error != nil || !strings.Contains(text, gw.Base+"/connect/") {
		t.Fatalf("bob (2025-06-18) got %+v, text %q", a.Error, text)
	}
	if a = bob0618.call(t, "tools/list", map[string]any{}); a.Error == nil || !strings.Contains(a.Error.Message, gw.Base+"/connect/") {
		t.Fatalf("bob's tools/list (2025-06-18): %+v %s", a.Error, a.Result)
	}
	// bob, 2026-07-28 without elicitation.url: his tools/list is -32021
	// naming the capability, with the URL.
	if res, e := modernRequest(t, desk, bobTok, 1, "tools/list", map[string]any{}, nil); res != nil ||
		!strings.Contains(string(e), `"code":-32021`) || !strings.Contains(string(e), gw.Base+"/connect/") {
		t.Fatalf("bob's tools/list (2026-07-28, no elicitation.url): %s %s", res, e)
	}

	// bob with the Go SDK (2026-07-28, no elicitation.url declared): an
	// error naming the URL; -32021 naming the capability on the fast path
	// (mcp-go's own path makes every handler error an internal error).
	if _, err := callTool(mustSession(t, desk, bobTok), "whoami", nil); err == nil || !strings.Contains(err.Error(), gw.Base+"/connect/") ||
		(wireFast == "on" && !strings.Contains(err.Error(), "elicitation.url")) {
		t.Fatalf("bob (2026-07-28, not connected): %v", err)
	}

	// bob through an llm agent: the model is told the server is his to
	// connect, with the URL, so its answer can say so.
	model.Script(fakellm.Text("connect first"))
	bobLLM := openLegacy(t, gw.Base+"/agents/helper/mcp", bobTok, "2025-06-18")
	if a = bobLLM.call(t, "tools/call", map[string]any{"name": "send_message", "arguments": map[string]any{"message": "who am I?"}}); a.Error != nil {
		t.Fatalf("bob's send_message: %+v", a.Error)
	}
	if chats := model.ChatRequests(); len(chats) == 0 || !strings.Contains(chats[len(chats)-1].Chat.System, gw.Base+"/connect/") {
		t.Fatalf("the model was not told where bob connects: %+v", chats)
	}

	// bob through a toolbox: its coded tool result carries the URL.
	bobBox := openLegacy(t, gw.Base+"/agents/box/mcp", bobTok, "2025-11-25")
	execWhoami := func() (string, bool) {
		a := bobBox.call(t, "tools/call", map[string]any{"name": "execute_tool", "arguments": map[string]any{"server": "team", "tool": "whoami", "args": map[string]any{}}})
		var res struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || len(res.Content) == 0 {
			t.Fatalf("execute_tool: %+v %s", a.Error, a.Result)
		}
		return res.Content[0].Text, res.IsError
	}
	if text, isErr := execWhoami(); !isErr || !strings.HasPrefix(text, "SERVER_UNAVAILABLE") || !strings.Contains(text, gw.Base+"/connect/") {
		t.Fatalf("toolbox, bob not connected: isError %v %q", isErr, text)
	}

	// Phishing: bob's link opened in alice's browser connects nothing.
	if code, body = browse(t, aliceBrowser, http.MethodGet, bobLink, nil); code != http.StatusForbidden || !strings.Contains(body, "Nothing was connected") {
		t.Fatalf("bob's link opened as alice: %d %s", code, body)
	}
	if _, a, _ = bob.whoami(t); a.Error == nil || a.Error.Code != -32042 {
		t.Fatalf("bob connected through alice's browser: %+v", a.Error)
	}
	if id, _, _ = alice.whoami(t); id.Sub != "alice" {
		t.Fatalf("alice's calls changed hands: %+v", id)
	}

	// bob opens his own link: the sign-in page, then the flow.
	bobBrowser := person(t, "bob")
	if code, body = browse(t, bobBrowser, http.MethodGet, bobLink, nil); code != http.StatusOK || !strings.Contains(body, `action="/connect/signin"`) {
		t.Fatalf("bob's link before signing in: %d %s", code, body)
	}
	next := strings.TrimPrefix(bobLink, gw.Base)
	if code, body = browse(t, bobBrowser, http.MethodPost, gw.Base+"/connect/signin", url.Values{"token": {bobTok}, "next": {next}, "csrf": {csrfOf(t, body)}}); code != http.StatusOK ||
		!strings.Contains(body, "Connected to team") {
		t.Fatalf("bob connects: %d %s", code, body)
	}
	bobID, a, text := bob.whoami(t)
	if !bobID.Verified || bobID.Sub != "bob" || bobID.Fingerprint == id.Fingerprint {
		t.Fatalf("bob's call reached whoami as %+v (%+v %s)", bobID, a.Error, text)
	}
	if id, _, _ = alice.whoami(t); id.Sub != "alice" {
		t.Fatalf("alice's call after bob connected: %+v", id)
	}
	if text, isErr := execWhoami(); isErr || !strings.Contains(text, `"sub":"bob"`) {
		t.Fatalf("toolbox, bob connected: isError %v %q", isErr, text)
	}
	// The llm agent's model now has the server's tools, and its call runs
	// with bob's own token.
	model.Script(fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "team__whoami", Args: json.RawMessage(`{}`)}), fakellm.Text("you are bob"))
	if a = bobLLM.call(t, "tools/call", map[string]any{"name": "send_message", "arguments": map[string]any{"message": "who am I?"}}); a.Error != nil {
		t.Fatalf("bob's send_message: %+v", a.Error)
	}
	chats := model.ChatRequests()
	last := chats[len(chats)-1].Chat.Messages
	if len(last) == 0 || last[len(last)-1].Role != "tool" || !strings.Contains(last[len(last)-1].Text, `"sub":"bob"`) {
		t.Fatalf("the model's tool result: %+v", last)
	}

	// dave, 2025-11-25, declared URL-mode elicitation: his call asks him,
	// on its stream, to open the connect URL; he accepts, connects in his
	// browser, and the same call goes on and answers.
	dave := openLegacyCaps(t, desk, daveTok, "2025-11-25", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}})
	var asked struct {
		Mode, URL, ElicitationID, Message string
	}
	a = dave.callAsked(t, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}},
		func(method string, params json.RawMessage) any {
			if method != "elicitation/create" || json.Unmarshal(params, &asked) != nil || asked.Mode != "url" || !strings.HasPrefix(asked.URL, gw.Base+"/connect/") {
				t.Errorf("dave was asked %s %s", method, params)
			}
			return map[string]any{"action": "accept"}
		},
		func() { connectFromLink(t, gw.Base, "dave", daveTok, asked.URL) })
	var daveRes struct {
		StructuredContent idp.Identity `json:"structuredContent"`
	}
	if a.Error != nil || json.Unmarshal(a.Result, &daveRes) != nil || daveRes.StructuredContent.Sub != "dave" {
		t.Fatalf("dave's call after connecting through the elicitation: %+v %s", a.Error, a.Result)
	}
	if want := `notifications/elicitation/complete {"elicitationId":"` + asked.ElicitationID + `"}`; asked.ElicitationID == "" || !slices.Contains(dave.notes, want) {
		t.Errorf("dave's stream carried %q, want %q", dave.notes, want)
	}

	// fay, 2025-11-25 with URL-mode elicitation: her tools/list asks her
	// on its stream; she accepts and connects, and the list goes on with
	// the server's tools.
	fay := openLegacyCaps(t, desk, fayTok, "2025-11-25", urlElicitation)
	var fayLink, fayID string
	a = fay.callAsked(t, "tools/list", map[string]any{},
		func(method string, params json.RawMessage) any {
			var p struct{ Mode, URL, ElicitationID string }
			if method != "elicitation/create" || json.Unmarshal(params, &p) != nil || p.Mode != "url" {
				t.Errorf("fay's list asked %s %s", method, params)
			}
			fayLink, fayID = p.URL, p.ElicitationID
			return map[string]any{"action": "accept"}
		},
		func() { connectFromLink(t, gw.Base, "fay", fayTok, fayLink) })
	if a.Error != nil || !strings.Contains(string(a.Result), `"whoami"`) {
		t.Fatalf("fay's tools/list after connecting through its elicitation: %+v %s", a.Error, a.Result)
	}
	// The list's stream tells her the connection is made, as a call's does.
	if want := `notifications/elicitation/complete {"elicitationId":"` + fayID + `"}`; fayID == "" || !slices.Contains(fay.notes, want) {
		t.Errorf("fay's list stream carried %q, want %q", fay.notes, want)
	}

	// hal declines the same request: his list is an error with the URL,
	// on the stream he was asked on.
	hal := openLegacyCaps(t, desk, halTok, "2025-11-25", urlElicitation)
	a = hal.callAsked(t, "tools/list", map[string]any{}, func(string, json.RawMessage) any { return map[string]any{"action": "decline"} }, nil)
	if a.Error == nil || !strings.Contains(a.Error.Message, "not accepted") || !strings.Contains(a.Error.Message, gw.Base+"/connect/") {
		t.Fatalf("hal's declined tools/list: %+v %s", a.Error, a.Result)
	}

	// The server's prompt: fay, connected, lists it and gets it with her own
	// token; hal, not connected, gets -32042 with the URL, as a call does
	// (not the server's answer to a prompts/get without a token).
	var prompts struct{ Prompts []struct{ Name string } }
	if a = fay.call(t, "prompts/list", map[string]any{}); a.Error != nil || json.Unmarshal(a.Result, &prompts) != nil {
		t.Fatalf("fay's prompts/list: %+v %s", a.Error, a.Result)
	}
	prompt := ""
	for _, p := range prompts.Prompts {
		if strings.HasSuffix(p.Name, "whoami") {
			prompt = p.Name
		}
	}
	if a = fay.call(t, "prompts/get", map[string]any{"name": prompt}); prompt == "" || a.Error != nil || !strings.Contains(string(a.Result), "you are fay") {
		t.Fatalf("fay's prompts/get %q: %+v %s", prompt, a.Error, a.Result)
	}
	if a = hal.call(t, "prompts/get", map[string]any{"name": prompt}); a.Error == nil || a.Error.Code != -32042 || !strings.Contains(string(a.Error.Data), gw.Base+"/connect/") {
		t.Fatalf("hal's prompts/get, not connected: %+v %s", a.Error, a.Result)
	}

	// gus, 2026-07-28 with elicitation.url: his tools/list is an
	// input-required round carrying the URL elicitation; a retry before he
	// connects gets the same round; once connected, the retry lists.
	listRound := func(id int, extra map[string]any) map[string]json.RawMessage {
		t.Helper()
		res, e := modernRequest(t, desk, gusTok, id, "tools/list", urlElicitation, extra)
		if res == nil {
			t.Fatalf("gus's tools/list: %s", e)
		}
		return res
	}
	gusRound := roundOf(t, listRound(1, nil))
	if again := roundOf(t, listRound(2, accepted(gusRound))); again.url != gusRound.url {
		t.Fatalf("gus's early retry asked %q, want the same round (%q)", again.url, gusRound.url)
	} else {
		gusRound = again
	}
	connectFromLink(t, gw.Base, "gus", gusTok, gusRound.url)
	if res := listRound(3, accepted(gusRound)); !strings.Contains(string(res["tools"]), `"whoami"`) {
		t.Fatalf("gus's tools/list once connected: %v", res)
	}

	// erin, 2026-07-28 with elicitation.url: an input-required round with
	// the URL elicitation; a retry that accepts it before she has connected
	// gets the same round again; she connects, the retry answering it goes
	// on.
	erinURL := modernConnectRound(t, desk, erinTok)
	if again := roundOf(t, modernPost(t, desk, erinTok, 2, accepted(erinURL))); again.url != erinURL.url {
		t.Fatalf("erin's early retry asked %q, want the same round (%q)", again.url, erinURL.url)
	} else {
		erinURL = again
	}
	connectFromLink(t, gw.Base, "erin", erinTok, erinURL.url)
	if sub := modernRetry(t, desk, erinTok, erinURL); sub != "erin" {
		t.Fatalf("erin's retry reached whoami as %q", sub)
	}

	// carol, once, in headless Chromium: the sign-in page, the list page's
	// Connect button, the provider, the "connected" page; no script error
	// and no Content-Security-Policy violation on the way.
	if wireFast == "on" {
		br := startBrowser(t, 1000, 700)
		br.call(br.session, "Network.setCookie", map[string]any{"name": "e2e-subject", "value": "carol", "domain": "127.0.0.1", "path": "/"}, nil)
		br.Navigate(gw.Base + "/connect/")
		br.MustEval(`document.querySelector("input[name=token]").value = `+jsString(carolTok), nil)
		br.MustEval(`document.querySelector("form").submit()`, nil)
		br.WaitTrue("carol's list page", 20*time.Second, `document.body.innerText.includes("Signed in as token:carol")`)
		br.MustEval(`document.querySelector("form[action='/connect/start']").submit()`, nil)
		br.WaitTrue("the connected page", 30*time.Second, `document.title === "Connected to team"`)
		if v := br.CSPViolations(); len(v) > 0 {
			t.Errorf("CSP violations on the connect pages: %q", v)
		}
		if p := br.Problems(); len(p) > 0 {
			t.Errorf("browser problems on the connect pages: %q", p)
		}
		carol := openLegacy(t, desk, carolTok, "2025-11-25")
		if cid, a, text := carol.whoami(t); cid.Sub != "carol" || !cid.Verified {
			t.Fatalf("carol's call after connecting in Chromium: %+v (%+v %s)", cid, a.Error, text)
		}
	}

	// A refresh once alice's access token (8 s) nears its end: her calls
	// keep working and carry a new token.
	first := id.Fingerprint
	deadline := time.Now().Add(40 * time.Second)
	for {
		id, a, text = alice.whoami(t)
		if id.Sub != "alice" || !id.Verified {
			t.Fatalf("alice's call while her token ages: %+v (%+v %s)", id, a.Error, text)
		}
		if v, _ := gw.Metric(`pallasgw_upstream_token_refreshes_total{outcome="ok",server="team"}`); v >= 1 && id.Fingerprint != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no refresh within 40 s of an 8 s token")
		}
		time.Sleep(250 * time.Millisecond) // polling the gateway, not waiting for it
	}

	wantConnected := 6.0 // alice, bob, dave, erin, fay, gus
	if wireFast == "on" {
		wantConnected = 7 // and carol
	}
	if v, ok := gw.Metric(`pallasgw_upstream_connections{server="team",state="connected"}`); !ok || v != wantConnected {
		t.Errorf("pallasgw_upstream_connections{connected} = %v (%v), want %v", v, ok, wantConnected)
	}

	// alice revokes hers: her next call asks her to connect again.
	if code, body = browse(t, aliceBrowser, http.MethodPost, gw.Base+"/connect/revoke", url.Values{"server": {"team"}}); code != http.StatusOK || !strings.Contains(body, "not_connected") {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if _, a, _ = alice.whoami(t); a.Error == nil || a.Error.Code != -32042 {
		t.Fatalf("alice after revoking: %+v", a.Error)
	}
	if bobID, _, _ = bob.whoami(t); bobID.Sub != "bob" {
		t.Fatalf("bob after alice revoked: %+v", bobID)
	}

	// No token the downstream ever received (each issued access token)
	// appears in the gateway's logs, /metrics or /-/status, nor do Hydra's
	// refresh tokens and codes (ory_rt_, ory_ac_).
	_, _, metricsText := mustGet(t, gw.Base+"/metrics", nil)
	_, _, status := mustGet(t, gw.Base+"/-/status", nil)
	var st struct {
		Upstream map[string]map[string]int `json:"upstream_connections"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil || len(st.Upstream) != 1 || st.Upstream["team"]["connected"] != int(wantConnected)-1 {
		t.Errorf("/-/status upstream_connections after alice revoked: %v (%v)", st.Upstream, err)
	}
	seen := who.Seen()
	if len(seen) < 3 {
		t.Fatalf("whoami saw %d tokens", len(seen))
	}
	gw.Stop()
	down.Stop()
	noTokensIn(t, map[string]string{"log": gw.Logs(), "metrics": metricsText, "status": status},
		[]string{aliceTok, bobTok, carolTok, daveTok, erinTok, fayTok, gusTok, halTok}, seen)
	t.Logf("whoami saw %d bearer values", len(seen))
}
