package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const foundationConfig = `
name: it
version: "2.3.4"
namespace: dev.pallasgw.it
listen: "127.0.0.1:{{PORT}}"
registry_port: {{REGPORT}}
trusted_proxies: ["127.0.0.1/32"]
allowed_origins: ["https://ui.example.com"]
limits: {max_body_bytes: 65536}
models:
  default: passthrough
  capabilities:
    passthrough: {vision: true, context_window: 8192, max_output_tokens: 1024}
agents:
  echo:
    description: Echoes.
    port: {{ECHOPORT}}
    icons: [{src: "https://example.com/e.svg", sizes: "any"}]
  tech_research:
    model: playback
    params: {playback: ["one", "two"]}
  pipeline: {kind: chain, sequence: [echo, tech_research]}
`

type foundation struct {
	*gw
	regPort, echoPort int
}

func startFoundation(t *testing.T) *foundation {
	ports := freePorts(t, 2)
	cfg := strings.NewReplacer("{{REGPORT}}", fmt.Sprint(ports[0]), "{{ECHOPORT}}", fmt.Sprint(ports[1])).Replace(foundationConfig)
	return &foundation{gw: startGateway(t, cfg), regPort: ports[0], echoPort: ports[1]}
}

func TestAgentsBothProtocolStyles(t *testing.T) {
	f := startFoundation(t)
	for _, style := range []struct{ name, version string }{{"sessionless", ""}, {"session-based", "2025-11-25"}, {"2025-06-18", "2025-06-18"}} {
		t.Run(style.name, func(t *testing.T) {
			var mu sync.Mutex
			var progress []*mcp.ProgressNotificationParams
			cs := connect(t, f.Base+"/agents/echo/mcp", style.version, func(r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				progress = append(progress, r.Params)
				mu.Unlock()
			})
			ctx := context.Background()
			if style.version != "" && cs.InitializeResult().ServerInfo.Name != "echo" {
				t.Errorf("serverInfo.name = %q", cs.InitializeResult().ServerInfo.Name)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if strings.Join(names, ",") != "get_health,send_message" {
				t.Fatalf("tools = %v", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "hello there"},
				Meta: mcp.Meta{"progressToken": "tok-" + style.name}})
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(t, res); got != "hello there" || res.IsError {
				t.Fatalf("answer = %q (isError %v)", got, res.IsError)
			}
			checkProgress(t, waitProgress(t, &mu, &progress), "tok-"+style.name)

			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_health", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var h struct{ Status, Timestamp string }
			if err := json.Unmarshal([]byte(textOf(t, res)), &h); err != nil || h.Status != "ok" {
				t.Fatalf("health = %q (%v)", textOf(t, res), err)
			}
			if _, err := time.Parse(time.RFC3339, h.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", h.Timestamp, err)
			}
			p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "echo_history"})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Messages) != 0 {
				t.Errorf("history prompt returned %d messages", len(p.Messages))
			}
		})
	}
}

// waitProgress polls until the notification carrying total (the last one)
// has been handled: the SDK client runs progress handlers asynchronously,
// so they may still be running when CallTool returns.
func waitProgress(t *testing.T, mu *sync.Mutex, ps *[]*mcp.ProgressNotificationParams) []*mcp.ProgressNotificationParams {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := append([]*mcp.ProgressNotificationParams{}, (*ps)...)
		mu.Unlock()
		for _, p := range got {
			if p.Total != 0 {
				return got
			}
		}
		if time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkProgress asserts at least one notification arrived, all carry the
// token, progress strictly increases, and only the last has total.
func checkProgress(t *testing.T, ps []*mcp.ProgressNotificationParams, token string) {
	t.Helper()
	if len(ps) < 2 {
		t.Fatalf("got %d progress notifications, want at least 2", len(ps))
	}
	for i, p := range ps {
		if fmt.Sprint(p.ProgressToken) != token {
			t.Errorf("notification %d token %v", i, p.ProgressToken)
		}
		if i > 0 && p.Progress <= ps[i-1].Progress {
			t.Errorf("progress not strictly increasing: %v then %v", ps[i-1].Progress, p.Progress)
		}
		if i < len(ps)-1 && p.Total != 0 {
			t.Errorf("notification %d has total before the last", i)
		}
	}
	if last := ps[len(ps)-1]; last.Total != last.Progress {
		t.Errorf("last notification total = %v, progress %v", last.Total, last.Progress)
	}
}

func TestHistoryAndMalformedEntries(t *testing.T) {
	f := startFoundation(t)
	cs := connect(t, f.Base+"/agents/echo/mcp", "", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{
		"message":         "latest",
		"conversation_id": "conv-7",
		"history": []any{
			map[string]any{"role": "user", "content": "first"},
			map[string]any{"role": "system", "content": "bad role"},
			"not an object",
			map[string]any{"role": "assistant", "content": 42},
			map[string]any{"role": "user", "content": "img", "images": []any{map[string]any{"data": "!!!", "mime_type": "image/png"}}},
			map[string]any{"role": "assistant", "content": "second"},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if textOf(t, res) != "latest" || res.IsError {
		t.Fatalf("answer %q", textOf(t, res))
	}
	_, _, metrics := httpGet(t, f.Base+"/metrics", nil)
	for _, reason := range []string{"bad_role", "not_object", "bad_content", "bad_image"} {
		want := fmt.Sprintf(`pallasgw_history_entries_skipped_total{agent="echo",reason=%q} 1`, reason)
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !f.logged(`"conversation_id":"conv-7"`) {
		t.Error("conversation_id not logged")
	}
}

// TestChainAndPlayback: a chain's result is its last step's; the playback
// model keeps nothing between calls (a call without history gets the first
// answer every time), and follows the history a caller sends back.
func TestChainAndPlayback(t *testing.T) {
	f := startFoundation(t)
	ctx := context.Background()
	cs := connect(t, f.Base+"/agents/pipeline/mcp", "2025-11-25", nil)
	for range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, res); got != "one" {
			t.Fatalf("got %q, want one", got)
		}
	}
	direct := connect(t, f.Base+"/agents/tech_research/mcp", "", nil)
	for turns, want := range []string{"one", "two", "one"} {
		var history []map[string]any
		for range turns {
			history = append(history, map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "assistant", "content": "a"})
		}
		res, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "x", "history": history}})
		if err != nil {
			t.Fatal(err)
		}
		if got := textOf(t, res); got != want {
			t.Errorf("after %d assistant turns: %q, want %q", turns, got, want)
		}
	}
}

func TestLegacyPortAndRegistry(t *testing.T) {
	f := startFoundation(t)
	cs := connect(t, fmt.Sprintf("http://127.0.0.1:%d/mcp", f.echoPort), "2025-11-25", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "via legacy"}})
	if err != nil || textOf(t, res) != "via legacy" {
		t.Fatalf("legacy call: %v", err)
	}
	norm := func(s string) string {
		s = regexp.MustCompile(`"updatedAt": "[^"]+"`).ReplaceAllString(s, `"updatedAt": "T"`)
		s = strings.ReplaceAll(s, fmt.Sprint(f.echoPort), "ECHOPORT")
		return strings.ReplaceAll(s, strings.TrimPrefix(f.Base, "http://127.0.0.1:"), "PORT")
	}
	code, hdr, body := httpGet(t, f.Base+"/.well-known/mcp/server.json", nil)
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("registry: %d %s", code, hdr.Get("Content-Type"))
	}
	golden(t, "registry.golden.json", norm(body))
	_, _, body = httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/.well-known/mcp/server.json", f.regPort), map[string]string{"Host": "agents.lan:1234"})
	golden(t, "registry_legacy.golden.json", norm(body))
	// Forwarded headers from a trusted proxy pick the public scheme and host.
	_, _, body = httpGet(t, f.Base+"/.well-known/mcp/server.json", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example.com"})
	if !strings.Contains(body, `"url": "https://agents.example.com/agents/echo/mcp"`) {
		t.Errorf("forwarded host not used:\n%s", body)
	}
}

// golden compares got with testdata/name; UPDATE_GOLDEN=1 rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

func TestHTTPSurface(t *testing.T) {
	f := startFoundation(t)
	cases := []struct {
		name   string
		do     func() (*http.Response, error)
		status int
		body   string
	}{
		{"unknown agent", func() (*http.Response, error) { return post(f.Base+"/agents/nobody/mcp", `{}`, nil) }, 404, `unknown agent \"nobody\"`},
		{"too large", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", `{"x":"`+strings.Repeat("a", 70000)+`"}`, nil)
		}, 413, "max_body_bytes"},
		{"bad origin", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", listTools, map[string]string{"Origin": "https://evil.example"})
		}, 403, "allowed_origins"},
		{"allowed origin", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", listTools, map[string]string{"Origin": "https://ui.example.com"})
		}, 200, "send_message"},
		{"dns rebinding", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", listTools, map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"})
		}, 403, "allowed_origins"},
		{"loopback page on a loopback host", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", listTools, map[string]string{"Host": "localhost:8200", "Origin": "http://localhost:3000"})
		}, 200, "send_message"},
		{"non-loopback host", func() (*http.Response, error) {
			return post(f.Base+"/agents/echo/mcp", listTools, map[string]string{"Host": "agents.example.com"})
		}, 200, "send_message"},
		{"malformed json-rpc", func() (*http.Response, error) { return post(f.Base+"/agents/echo/mcp", `{"jsonrpc":`, nil) }, 400, "not valid json"},
		{"GET has no stream", func() (*http.Response, error) { return http.Get(f.Base + "/agents/echo/mcp") }, 405, "no GET stream"},
		{"healthz", func() (*http.Response, error) { return http.Get(f.Base + "/healthz") }, 200, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := c.do()
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := new(strings.Builder)
			_, _ = io.Copy(b, resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(b.String(), c.body) {
				t.Fatalf("got %d %q; want %d containing %q", resp.StatusCode, b.String(), c.status, c.body)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
	t.Run("request id echoed", func(t *testing.T) {
		_, hdr, _ := httpGet(t, f.Base+"/healthz", map[string]string{"X-Request-Id": "abc-123"})
		if hdr.Get("X-Request-Id") != "abc-123" {
			t.Fatalf("X-Request-Id = %q", hdr.Get("X-Request-Id"))
		}
	})
	t.Run("sse stream in order", func(t *testing.T) {
		// A raw client without initialize: every notification arrives, in
		// order, with a strictly increasing counter, before the result.
		for i := 0; i < 20; i++ {
			resp, err := post(f.Base+"/agents/pipeline/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"hi"},"_meta":{"progressToken":"p"}}}`, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("content-type %q, X-Accel-Buffering %q", resp.Header.Get("Content-Type"), resp.Header.Get("X-Accel-Buffering"))
			}
			checkSSE(t, string(b))
		}
	})
	t.Run("metrics", func(t *testing.T) {
		_, _, m := httpGet(t, f.Base+"/metrics", nil)
		for _, want := range []string{`pallasgw_build_info{`, `pallasgw_http_requests_total{code="404",handler="agent"}`, "go_goroutines", `pallasgw_config_last_reload_successful 1`} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

// listTools is a sessionless (2026-07-28) tools/list a raw HTTP client sends.
const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

func post(url, body string, hdr map[string]string) (*http.Response, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(body), &msg) == nil && strings.Contains(body, "2026-07-28") {
		req.Header.Set("Mcp-Method", msg.Method)
		if msg.Params.Name != "" {
			req.Header.Set("Mcp-Name", msg.Params.Name)
		}
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
		if k == "Host" {
			req.Host = v
		}
	}
	return http.DefaultClient.Do(req)
}

func TestValidateBadConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../configs/testdata/*.bad.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := exec.Command(binary(), "validate", "--config", f).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want 1; output:\n%s", err, out)
			}
			raw, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(raw), "\n") {
				if w, ok := strings.CutPrefix(l, "# want: "); ok {
					w = strings.ReplaceAll(strings.TrimSpace(w), "FILE", f)
					if !strings.Contains(string(out), w) {
						t.Errorf("missing %q in:\n%s", w, out)
					}
				}
			}
		})
	}
}

// TestValidateExampleConfigs runs `pallasgw validate` on every example in
// configs/, as an operator would after exporting the variables it names:
// each ${VAR} without a default gets a distinct dummy value. An example
// must validate with no warning, so that none of them rots.
func TestValidateExampleConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) < 3 {
		t.Fatalf("want at least quickstart, example and team in configs/, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(binary(), "validate", "--config", f)
			cmd.Env = append(os.Environ(), dummyEnv(raw)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s does not validate: %v\n%s", f, err, out)
			}
			if strings.Contains(string(out), "warning:") {
				t.Errorf("%s validates with warnings:\n%s", f, out)
			}
		})
	}
}

// requiredVar is a ${VAR} reference without a default.
var requiredVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// dummyEnv gives every required variable of a config a value of its own,
// long enough for a token (16 characters) and distinct, as tokens must be.
func dummyEnv(raw []byte) []string {
	var env []string
	for _, m := range requiredVar.FindAllSubmatch(raw, -1) {
		env = append(env, fmt.Sprintf("%s=dummy-%s-0123456789", m[1], strings.ToLower(string(m[1]))))
	}
	return env
}

// checkSSE parses an SSE body: progress notifications strictly increasing,
// the last one with total, then exactly one result last.
func checkSSE(t *testing.T, body string) {
	t.Helper()
	var last float64
	var sawTotal, sawResult bool
	for _, ev := range strings.Split(strings.TrimSpace(body), "\n\n") {
		data := ev[strings.Index(ev, "data: ")+6:]
		var m struct {
			Method string
			Params struct {
				Progress float64
				Total    *float64
			}
			Result json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("bad event %q: %v", ev, err)
		}
		switch {
		case sawResult:
			t.Fatalf("event after the result: %s", data)
		case m.Method == "notifications/progress":
			if m.Params.Progress <= last || sawTotal {
				t.Fatalf("progress %v after %v (total seen %v):\n%s", m.Params.Progress, last, sawTotal, body)
			}
			last, sawTotal = m.Params.Progress, m.Params.Total != nil
		case m.Result != nil:
			sawResult = true
		}
	}
	if !sawTotal || !sawResult || last < 4 {
		t.Fatalf("incomplete stream (total %v, result %v, last %v):\n%s", sawTotal, sawResult, last, body)
	}
}
