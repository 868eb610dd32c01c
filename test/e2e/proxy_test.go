//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// The slow call every proxy test makes: the fake model asks for the
// everything server's long-running tool (progress every 0.6s for 3s), then
// answers. The agent reports its steps and relays the tool's progress.
const (
	slowTool     = "trigger-long-running-operation"
	slowSteps    = 5
	slowDuration = 3 // seconds
	slowAnswer   = "the long operation finished"
)

const streamingConfig = `
name: e2e
namespace: dev.pallasgw.e2e
listen: "127.0.0.1:{{PORT}}"
# nginx and Caddy connect from loopback: believe their X-Forwarded-*.
trusted_proxies: ["127.0.0.1/32", "::1/128"]
models:
  default: openai.fake-model
  providers:
    openai:
      base_url: {{LLM}}
      api_key: e2e-key
mcp:
  servers:
    everything:
      transport: http
      url: {{EVERYTHING}}
      timeout: 60s
agents:
  worker:
    description: Runs the everything server's long-running operation.
    servers: [everything]
    tools: {allow: ["everything__trigger-long-running-operation"]}
`

// streamingStack is a gateway whose agent "worker" makes one slow,
// progress-reporting downstream call per send_message.
type streamingStack struct {
	gw  *gateway
	llm *fakellm.Server
}

func startStreamingStack(t *testing.T) *streamingStack {
	t.Helper()
	everything := startEverything(t)
	llm := fakellm.New(t)
	cfg := strings.NewReplacer("{{LLM}}", llm.OpenAIBaseURL(), "{{EVERYTHING}}", everything).Replace(streamingConfig)
	return &streamingStack{gw: startGateway(t, cfg), llm: llm}
}

// scriptSlowCall queues the model's two turns of one slow call.
func (s *streamingStack) scriptSlowCall() {
	args := fmt.Sprintf(`{"duration":%d,"steps":%d}`, slowDuration, slowSteps)
	s.llm.Script(
		fakellm.ToolCalls(fakellm.Call{Name: "everything__" + slowTool, Args: json.RawMessage(args)}),
		fakellm.Text(slowAnswer),
	)
}

// clientEvent is one line of ts/progress-client.mjs.
type clientEvent struct {
	Event    string   `json:"event"`
	At       int64    `json:"at"` // ms since the epoch, when received
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
	IsError  bool     `json:"isError"`
	Text     string   `json:"text"`
	Error    string   `json:"error"`
}

// checkStreamedCall runs the TypeScript SDK client against url (through a
// proxy) and checks that progress streamed: every notification arrived
// before the result, and not all at once at the end.
func checkStreamedCall(t *testing.T, s *streamingStack, url string) {
	t.Helper()
	s.scriptSlowCall()
	lines := runNodeScript(t, 2*time.Minute, "progress-client.mjs", url, "run the long operation")
	var events []clientEvent
	for _, l := range lines {
		var e clientEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("client printed a line that is not JSON: %q", l)
		}
		events = append(events, e)
	}
	t.Logf("client events:\n%s", strings.Join(lines, "\n"))

	resultAt := -1
	for i, e := range events {
		if e.Event == "result" {
			resultAt = i
		}
	}
	if resultAt < 0 {
		t.Fatal("the client printed no result")
	}
	result := events[resultAt]
	if result.IsError || result.Text != slowAnswer {
		t.Fatalf("result isError=%v text %q, want the model's answer %q", result.IsError, result.Text, slowAnswer)
	}
	var progress []clientEvent
	for i, e := range events {
		if e.Event != "progress" {
			continue
		}
		if i > resultAt {
			t.Errorf("notification %q arrived after the result", e.Message)
		}
		progress = append(progress, e)
	}
	if len(progress) == 0 {
		t.Fatal("no progress notification reached the client through the proxy")
	}

	// One strictly increasing counter per call.
	for i := 1; i < len(progress); i++ {
		if progress[i].Progress <= progress[i-1].Progress {
			t.Errorf("progress went from %v to %v (%q)", progress[i-1].Progress, progress[i].Progress, progress[i].Message)
		}
	}

	// Streaming, not buffered: the agent announced its first step before
	// the slow tool ran, so that notification reaches the client seconds
	// before the result. A buffering proxy delivers everything at the end.
	if lead := result.At - progress[0].At; lead < 1000 {
		t.Errorf("the first notification (%q) arrived only %dms before the result: the proxy buffered the SSE stream", progress[0].Message, lead)
	}

	label := "everything/" + slowTool + ": "
	msgs := map[string]bool{}
	var relayed []clientEvent
	for _, p := range progress {
		msgs[p.Message] = true
		if rest, ok := strings.CutPrefix(p.Message, label); ok && rest != "started" && rest != "completed" && rest != "failed" {
			relayed = append(relayed, p)
		}
	}
	for _, want := range []string{"worker step 1 (llm)", "worker step 1 (tool)", label + "started", label + "completed", "worker step 2 (llm)"} {
		if !msgs[want] {
			t.Errorf("no notification %q", want)
		}
	}
	// The downstream tool's own progress (one notification per step,
	// 0.6s apart) relayed with the server/tool prefix.
	if len(relayed) < slowSteps {
		t.Errorf("%d relayed downstream progress notifications (%q...), want %d: the downstream's progress is not relayed", len(relayed), label, slowSteps)
	} else if spread := relayed[len(relayed)-1].At - relayed[0].At; spread < 1000 {
		t.Errorf("the %d relayed notifications arrived within %dms, want them spread over the tool's %ds", len(relayed), spread, slowDuration)
	}
}

// checkSilentCall makes the slow call without a progress token, so the
// response stays silent until the result (a plain JSON body or an SSE
// stream without events): the proxy's read and response-header timeouts
// must not cut it.
func checkSilentCall(t *testing.T, s *streamingStack, url string) {
	t.Helper()
	s.scriptSlowCall()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-silent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer cs.Close()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "run it quietly"}})
	if err != nil {
		t.Fatalf("silent %ds call through the proxy: %v (after %s)", slowDuration, err, time.Since(start).Round(time.Millisecond))
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("silent call: isError=%v content %v", res.IsError, res.Content)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != slowAnswer {
		t.Fatalf("silent call answered %v, want %q", res.Content[0], slowAnswer)
	}
}

// checkRegistryHost checks that the registry fetched through the proxy
// advertises the host and port the client used (public host, not the
// gateway's loopback address). The client also sends its own
// X-Forwarded-Host/Proto: the proxy must replace them, or any client could
// choose the URLs the registry hands out.
func checkRegistryHost(t *testing.T, proxyPort int, host string) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/.well-known/mcp/server.json", proxyPort)
	code, hdr, body := mustGet(t, url, map[string]string{
		"Host": host, "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https",
	})
	if code != http.StatusOK {
		t.Fatalf("registry through the proxy with Host %s: %d %s", host, code, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("registry Content-Type %q", ct)
	}
	var doc struct {
		Servers []struct {
			Server struct {
				Name    string `json:"name"`
				Remotes []struct {
					Type string `json:"type"`
					URL  string `json:"url"`
				} `json:"remotes"`
			} `json:"server"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("registry: %v\n%s", err, body)
	}
	want := "http://" + host + "/agents/worker/mcp"
	for _, s := range doc.Servers {
		for _, r := range s.Server.Remotes {
			if r.URL == want && r.Type == "streamable-http" {
				return
			}
		}
	}
	t.Errorf("registry through the proxy (Host %s) does not advertise %s:\n%s", host, want, body)
}

// hostRewriter sends every request to the proxy with a fixed Host header.
type hostRewriter struct{ host string }

func (h hostRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return http.DefaultTransport.RoundTrip(r)
}

// checkForeignHost calls the agent through the proxy with a Host that is
// not loopback (as behind a real site name): the gateway must accept it
// (mcp-go's DNS-rebinding guard would answer 403 "invalid Host header").
func checkForeignHost(t *testing.T, proxyPort int) {
	t.Helper()
	host := fmt.Sprintf("agents.example.com:%d", proxyPort)
	checkRegistryHost(t, proxyPort, host)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-foreign-host", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   fmt.Sprintf("http://127.0.0.1:%d/agents/worker/mcp", proxyPort),
		HTTPClient: &http.Client{Transport: hostRewriter{host}},
		MaxRetries: -1,
	}
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("MCP connect through the proxy with Host %s: %v", host, err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_health", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("get_health through the proxy with Host %s: %v", host, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("get_health with Host %s: isError=%v content %v", host, res.IsError, res.Content)
	}
	var h struct{ Status string }
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &h) != nil || h.Status == "" {
		t.Fatalf("get_health with Host %s answered %v", host, res.Content[0])
	}
}

// substitute applies each old→new replacement to s once, failing the test
// when the shipped file no longer contains old (the test would silently
// stop testing it).
func substitute(t *testing.T, name, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		re := regexp.MustCompile(pairs[i])
		if !re.MatchString(s) {
			t.Fatalf("%s no longer matches %s; update the test", name, pairs[i])
		}
		s = re.ReplaceAllString(s, pairs[i+1])
	}
	return s
}

// plainConfig is a gateway that trusts no proxy: its registry can only
// take the public host from the Host header the proxy passes on.
const plainConfig = `
name: e2e-plain
namespace: dev.pallasgw.e2e
listen: "127.0.0.1:{{PORT}}"
agents:
  worker:
    model: passthrough
`

// TestNginx runs the shipped configs/nginx/pallasgw.conf in front of two
// gateways: one trusting nginx's X-Forwarded-* (the slow agent), one
// trusting nothing (its registry relies on Host $http_host).
func TestNginx(t *testing.T) {
	nginx := tool(t, "nginx")
	s := startStreamingStack(t)
	plain := startGateway(t, plainConfig)
	dir := t.TempDir()
	ports := freePorts(t, 2)
	port, plainPort := ports[0], ports[1]

	shipped := readRepoFile(t, "configs/nginx/pallasgw.conf")
	site := func(listen int, upstream string, gwPort int) string {
		return substitute(t, "configs/nginx/pallasgw.conf", shipped,
			`(?m)^\s*listen\s+80;`, fmt.Sprintf("    listen 127.0.0.1:%d;", listen),
			`(?m)^\s*listen\s+\[::\]:80;\n`, "",
			`server\s+127\.0\.0\.1:8200\b`, fmt.Sprintf("server 127.0.0.1:%d", gwPort), // keeps the server's parameters (max_fails=0)
			`upstream\s+pallasgw\s*\{`, "upstream "+upstream+" {",
			`proxy_pass\s+http://pallasgw;`, "proxy_pass http://"+upstream+";",
		)
	}
	writeFile(t, dir, "pallasgw.conf", site(port, "pallasgw", s.gw.Port))
	writeFile(t, dir, "plain.conf", site(plainPort, "pallasgw_plain", plain.Port))
	user := ""
	if os.Geteuid() == 0 {
		// As root, nginx would run its workers as nobody, who cannot
		// enter the test's private temp directory.
		user = "user root;"
	}
	main := fmt.Sprintf(`
%[2]s
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    # The shipped directives must keep SSE unbuffered on their own: ignore
    # the gateway's X-Accel-Buffering: no, which would hide a missing
    # proxy_buffering off.
    proxy_ignore_headers X-Accel-Buffering;
    include %[1]s/pallasgw.conf;
    include %[1]s/plain.conf;
}
`, dir, user)
	conf := writeFile(t, dir, "nginx.conf", main)
	errLog := filepath.Join(dir, "error.log")
	if out, err := exec.Command(nginx, "-t", "-p", dir, "-e", errLog, "-c", conf).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	p := startProc(t, "nginx", exec.Command(nginx, "-p", dir, "-e", errLog, "-c", conf, "-g", "daemon off;"))
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(errLog)
			t.Logf("--- nginx error.log:\n%s", tail(string(b), 8000))
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, "nginx to proxy /readyz", 30*time.Second, p, httpGetOK(base+"/readyz"))
	waitFor(t, "nginx to proxy /readyz (plain)", 30*time.Second, p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", plainPort)))

	checkProxy(t, s, base, port, plainPort)
}

// checkProxy runs the checks shared by the nginx and Caddy tests: port is
// the proxy in front of the streaming stack's gateway (trusting the proxy),
// plainPort the one in front of a gateway that trusts no proxy.
func checkProxy(t *testing.T, s *streamingStack, base string, port, plainPort int) {
	t.Run("progress streams through", func(t *testing.T) {
		checkStreamedCall(t, s, base+"/agents/worker/mcp")
	})
	t.Run("silent call is not cut", func(t *testing.T) {
		checkSilentCall(t, s, base+"/agents/worker/mcp")
	})
	t.Run("registry advertises the public host with port", func(t *testing.T) {
		checkRegistryHost(t, port, fmt.Sprintf("localhost:%d", port))
	})
	t.Run("registry host from the Host header alone", func(t *testing.T) {
		checkRegistryHost(t, plainPort, fmt.Sprintf("localhost:%d", plainPort))
	})
	t.Run("non-loopback Host accepted", func(t *testing.T) {
		checkForeignHost(t, port)
	})
	t.Run("body limit is the gateway's", func(t *testing.T) {
		checkBodyLimit(t, base)
	})
	t.Run("admin, profiling and metrics endpoints are not public", func(t *testing.T) {
		for _, path := range []string{"/-/status", "/debug/pprof/", "/debug/pprof/heap", "/metrics"} {
			if code, _, body := mustGet(t, base+path, nil); code != http.StatusForbidden {
				t.Errorf("%s through the proxy: %d %.200s, want 403", path, code, body)
			}
		}
	})
}

// runCaddy validates and runs Caddy on sites (Caddyfile site blocks) with
// no admin API, no certificates and loopback only, its state in dir.
func runCaddy(t *testing.T, caddy, dir, sites string) *proc {
	t.Helper()
	global := "{\n\tadmin off\n\tauto_https off\n\tdefault_bind 127.0.0.1\n}\n\n"
	conf := writeFile(t, dir, "Caddyfile", global+sites)
	env := append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	validate := exec.Command(caddy, "validate", "--config", conf, "--adapter", "caddyfile")
	validate.Env = env
	if out, err := validate.CombinedOutput(); err != nil {
		t.Fatalf("caddy validate: %v\n%s", err, out)
	}
	cmd := exec.Command(caddy, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env = env
	return startProc(t, "caddy", cmd)
}

// TestCaddy runs the shipped configs/caddy/Caddyfile, on plain HTTP, in
// front of the same two gateways as TestNginx.
func TestCaddy(t *testing.T) {
	caddy := tool(t, "caddy")
	s := startStreamingStack(t)
	plain := startGateway(t, plainConfig)
	dir := t.TempDir()
	ports := freePorts(t, 2)
	port, plainPort := ports[0], ports[1]

	shipped := readRepoFile(t, "configs/caddy/Caddyfile")
	site := func(listen, gwPort int) string {
		return substitute(t, "configs/caddy/Caddyfile", shipped,
			`(?m)^agents\.example\.com\s*\{`, fmt.Sprintf("http://:%d {", listen),
			`reverse_proxy\s+127\.0\.0\.1:8200\b`, fmt.Sprintf("reverse_proxy 127.0.0.1:%d", gwPort),
		)
	}
	p := runCaddy(t, caddy, dir, site(port, s.gw.Port)+"\n"+site(plainPort, plain.Port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, "caddy to proxy /readyz", 30*time.Second, p, httpGetOK(base+"/readyz"))
	waitFor(t, "caddy to proxy /readyz (plain)", 30*time.Second, p, httpGetOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", plainPort)))

	checkProxy(t, s, base, port, plainPort)
}
