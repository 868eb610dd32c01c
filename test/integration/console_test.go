package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// postAgents asks the console's agents listing as the page does.
func postAgents(t testing.TB, base string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/console/agents", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
		if strings.EqualFold(k, "Host") {
			req.Host = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(b, &out)
	return resp.StatusCode, resp.Header, out
}

func agentNames(v map[string]any) string {
	var names []string
	list, _ := v["agents"].([]any)
	for _, a := range list {
		names = append(names, a.(map[string]any)["name"].(string))
	}
	return strings.Join(names, ",")
}

const consoleTokensConfig = `name: it
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: alice, token: alice-token-0123456789, agents: [echo]}
    - {name: bob, token: bob-token-0123456789abc}
policy:
  callers:
    bob: {agents: ["o*"]}
agents:
  echo: {model: passthrough, port: 0}
  oracle: {model: playback, params: {playback: ["42"]}}
  pipeline: {kind: chain, sequence: [echo, oracle]}
`

// The console lists what each caller's endpoints would let it use: the
// token's agents globs and the caller's policy rule, a 401 with the
// endpoint's challenge without a valid token; the Origin rule applies.
func TestConsoleAgentsPolicy(t *testing.T) {
	g := startGateway(t, consoleTokensConfig)
	cases := []struct {
		name   string
		hdr    map[string]string
		code   int
		agents string
	}{
		{"no token", nil, 401, ""},
		{"bad token", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, 401, ""},
		{"token of echo only", map[string]string{"Authorization": "Bearer alice-token-0123456789"}, 200, "echo"},
		{"caller rule narrows", map[string]string{"Authorization": "Bearer bob-token-0123456789abc"}, 200, "oracle"},
		{"loopback page", map[string]string{"Authorization": "Bearer alice-token-0123456789", "Origin": "http://127.0.0.1"}, 200, "echo"},
		{"rebinding page", map[string]string{"Authorization": "Bearer alice-token-0123456789", "Origin": "http://evil.example.com", "Host": "evil.example.com"}, 403, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := postAgents(t, g.Base, c.hdr)
			if code != c.code || agentNames(body) != c.agents {
				t.Fatalf("%d %v, want %d with agents %q", code, body, c.code, c.agents)
			}
			if code == 401 && (h.Get("WWW-Authenticate") == "" || body["auth_mode"] != "tokens") {
				t.Errorf("401 without the challenge or the auth mode: %v %v", h, body)
			}
		})
	}
	// The page itself needs no token and holds nothing of the config.
	code, h, page := httpGet(t, g.Base+"/", nil)
	if code != 200 || h.Get("Content-Security-Policy") == "" || strings.Contains(page, "alice") || strings.Contains(page, "token-0123") {
		t.Errorf("GET / without a token: %d %v", code, h)
	}
}

// console: false turns every console path into the router's 404, and a
// reload turns it back on.
func TestConsoleOffSwitch(t *testing.T) {
	cfg := "name: it\nlisten: \"127.0.0.1:{{PORT}}\"\nconsole: false\nagents:\n  echo: {model: passthrough}\n"
	g := startGateway(t, cfg)
	for _, p := range []string{"/", "/console/app.js"} {
		if code, _, body := httpGet(t, g.Base+p, nil); code != 404 || !strings.Contains(body, "no route") {
			t.Errorf("GET %s with console: false: %d %s", p, code, body)
		}
	}
	if code, _, _ := postAgents(t, g.Base, nil); code != 404 {
		t.Errorf("POST /console/agents with console: false: %d", code)
	}
	g.writeConfig(t, strings.Replace(cfg, "console: false", "console: true", 1))
	eventually(t, 10*time.Second, "the console to come on", func() bool {
		code, _, _ := httpGet(t, g.Base+"/", nil)
		return code == 200
	})
	if code, _, body := postAgents(t, g.Base, nil); code != 200 || agentNames(body) != "echo" {
		t.Errorf("after the reload: %d %v", code, body)
	}
}
