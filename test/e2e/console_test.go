//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// consoleConfig is the quickstart's agents (built-in passthrough and
// playback models, no API key) on free ports, plus a proxy agent in front
// of the gateway's own echo endpoint (a downstream MCP server that needs
// nothing installed); {{AUTH}} is replaced.
const consoleConfig = `name: quickstart
namespace: dev.pallasgw.quickstart
listen: "127.0.0.1:{{PORT}}"
{{AUTH}}
models:
  default: passthrough
agents:
  echo:
    title: Echo Agent
    description: Answers with your own message (built-in passthrough model).
    model: passthrough
    port: {{LEGACY}}
  oracle:
    description: Answers from a scripted list, in turn (built-in playback model).
    model: playback
    params:
      playback: ["The answer is 42.", "Ask again tomorrow."]
  pipeline:
    kind: chain
    description: Runs echo, then oracle.
    sequence: [echo, oracle]
  tools:
    kind: proxy
    description: Echo's tools, through a proxy to this gateway's own endpoint.
    servers: [self]
mcp:
  servers:
    self: {url: "http://127.0.0.1:{{PORT}}/agents/echo/mcp"}
`

// screenshotDir is where the console's screenshots go:
// $PALLASGW_E2E_ARTIFACTS when set (relative to the repository; the
// docs' pictures are made with PALLASGW_E2E_ARTIFACTS=test/e2e/screenshots),
// else the test's temporary directory, named in the log.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("PALLASGW_E2E_ARTIFACTS"); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(repoDir, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func consoleGateway(t *testing.T, auth string) *gateway {
	legacy := freePorts(t, 1)[0]
	cfg := strings.ReplaceAll(consoleConfig, "{{AUTH}}", auth)
	cfg = strings.ReplaceAll(cfg, "{{LEGACY}}", strconv.Itoa(legacy))
	return startGateway(t, cfg)
}

// TestConsole loads the console in headless Chromium against a running
// gateway: the agents with their health, a message sent in the
// playground with its progress steps and answer, the operations panel
// with a failed and a good reload and the charts, and no exception,
// console error or Content-Security-Policy violation on the way.
func TestConsole(t *testing.T) {
	gw := consoleGateway(t, "")
	b := startBrowser(t, 1280, 1000)

	// A bad edit, then a good one: the operations panel shows both.
	good, err := os.ReadFile(gw.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(gw.ConfigPath), filepath.Base(gw.ConfigPath), string(good)+"bogus_key: 1\n")
	if code, body := postReload(t, gw.Base); code != http.StatusUnprocessableEntity {
		t.Fatalf("bad reload answered %d %s", code, body)
	}
	writeFile(t, filepath.Dir(gw.ConfigPath), filepath.Base(gw.ConfigPath), string(good)+"# edited\n")
	waitFor(t, "the good config to serve again", 10*time.Second, nil, func() error {
		if code, body := postReload(t, gw.Base); code != http.StatusOK {
			return fmt.Errorf("reload %d %s", code, body)
		}
		return nil
	})

	// 127.0.0.1 on both sides: the page's own calls pass the Origin rule
	// without allowed_origins.
	b.Navigate(gw.Base + "/")
	b.WaitTrue("four agents listed", 15*time.Second, `document.querySelectorAll("#agents tbody tr").length === 4`)
	var names []string
	b.MustEval(`[...document.querySelectorAll("#agents tbody tr")].map(r => r.dataset.agent)`, &names)
	if strings.Join(names, ",") != "echo,oracle,pipeline,tools" {
		t.Errorf("agents listed: %v", names)
	}
	b.WaitTrue("every agent's health ok", 20*time.Second,
		`[...document.querySelectorAll("#agents .health")].every(h => h.dataset.status === "ok")`)
	var row string
	b.MustEval(`document.querySelector('#agents tr[data-agent="echo"]').innerText`, &row)
	for _, want := range []string{"Echo Agent", "llm", "passthrough", ":", "ok"} {
		if !strings.Contains(row, want) {
			t.Errorf("echo's row %q lacks %q", row, want)
		}
	}

	// The playground, a proxy's tool: its arguments in a form built from
	// the tool's input schema.
	b.WaitTrue("the message tool picked", 10*time.Second, `document.querySelector("#play-tool").value === "send_message"`)
	b.MustEval(`(() => { const s = document.querySelector("#play-agent"); s.value = "tools"; s.dispatchEvent(new Event("change")); })()`, nil)
	b.WaitTrue("the proxy's tool form", 10*time.Second, `!document.querySelector("#schema-fields").hidden && document.querySelector("#arg-message") !== null`)
	var fields []string
	b.MustEval(`[...document.querySelectorAll("#schema-fields [data-name]")].map(e => e.dataset.name + ":" + e.dataset.kind + (e.dataset.required ? "*" : ""))`, &fields)
	if got := strings.Join(fields, ","); got != "message:string*,images:json,history:json,conversation_id:string" {
		t.Errorf("send_message's form through the proxy: %s", got)
	}
	b.MustEval(`document.querySelector("#arg-message").value = "through the proxy"`, nil)
	b.MustEval(`document.querySelector("#arg-history").value = '[{"role":"user","content":"earlier"}]'`, nil)
	b.MustEval(`document.querySelector("#play-send").click()`, nil)
	b.WaitTrue("the proxy's answer", 20*time.Second, `document.querySelector("#play-answer").dataset.state === "ok"`)
	var answer string
	b.MustEval(`document.querySelector("#play-answer").innerText`, &answer)
	if !strings.Contains(answer, "through the proxy") {
		t.Errorf("proxy answer %q", answer)
	}

	// The playground: the chain streams its sub-agents' steps, then the
	// oracle's answer.
	b.MustEval(`(() => { const s = document.querySelector("#play-agent"); s.value = "pipeline"; s.dispatchEvent(new Event("change")); })()`, nil)
	b.WaitTrue("pipeline's tools listed", 10*time.Second,
		`document.querySelector("#play-agent").value === "pipeline" && document.querySelector("#play-tool").value === "send_message" && !document.querySelector("#msg-fields").hidden`)
	b.MustEval(`document.querySelector("#play-message").value = "What is the answer?"`, nil)
	b.MustEval(`document.querySelector("#history-box").open = true`, nil)
	b.MustEval(`document.querySelector("#play-history").value = "user: hello\nassistant: hi, ask me anything"`, nil)
	b.MustEval(`document.querySelector("#play-send").click()`, nil)
	b.WaitTrue("the answer", 20*time.Second, `document.querySelector("#play-answer").dataset.state === "ok"`)
	var steps []string
	b.MustEval(`[...document.querySelectorAll("#play-steps li")].map(li => li.textContent)`, &steps)
	joined := strings.Join(steps, "\n")
	for _, want := range []string{"pipeline step 1", "echo/send_message: echo step 1 (llm)", "oracle/send_message:", "pipeline: done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("progress steps lack %q:\n%s", want, joined)
		}
	}
	b.MustEval(`document.querySelector("#play-answer").innerText`, &answer)
	if !strings.Contains(answer, "The answer is 42.") {
		t.Errorf("answer %q", answer)
	}

	// Operations (loopback caller, admin.token empty): config, the
	// failed reload with its file:line, listeners, charts with samples.
	b.WaitTrue("the operations panel", 10*time.Second, `!document.querySelector("#ops-body").hidden`)
	b.WaitTrue("three reloads listed", 10*time.Second, `document.querySelectorAll("#ops-reloads tbody tr").length >= 3`)
	var reloads string
	b.MustEval(`document.querySelector("#ops-reloads").innerText`, &reloads)
	if !strings.Contains(reloads, filepath.Base(gw.ConfigPath)+":") || !strings.Contains(reloads, "bogus_key") {
		t.Errorf("the reloads table does not show the failed reload's file:line: %s", reloads)
	}
	var listeners string
	b.MustEval(`document.querySelector("#ops-listeners").innerText`, &listeners)
	if !strings.Contains(listeners, "127.0.0.1:"+strconv.Itoa(gw.Port)) {
		t.Errorf("listeners %q", listeners)
	}
	// Some traffic, so that the charts have something to show (the page
	// samples /metrics every 2 s).
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+i%7*40) * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodPost, gw.Base+"/agents/echo/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"load"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	b.WaitTrue("charts with six samples", 30*time.Second,
		`(document.querySelector("#chart-calls path.line")?.getAttribute("d") || "").split("L").length >= 6 && Number(document.querySelector("#v-calls").textContent) > 0`)
	close(stop)
	<-done

	shot := filepath.Join(screenshotDir(t), "console.png")
	b.Screenshot(shot)
	t.Logf("screenshot: %s", shot)

	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page had problems (exceptions, console errors):\n%s", strings.Join(p, "\n"))
	}
	if v := b.CSPViolations(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", v)
	}
	// The policy is enforced: an inline script is refused.
	b.MustEval(`document.head.append(Object.assign(document.createElement("script"), {textContent: "window.__inlineRan = true"}))`, nil)
	b.WaitTrue("the inline script refused", 5*time.Second, `window.__cspViolations.length > 0 && window.__inlineRan !== true`)
}

// TestConsoleTokens: with auth.mode tokens the page asks for a token,
// keeps it in the tab (sessionStorage, no cookie, no localStorage), lists
// only the agents the token may use, and the page's own MCP client is
// refused on another agent. The operations panel stays locked without
// admin.token.
func TestConsoleTokens(t *testing.T) {
	const echoOnly = "echo-only-token-0123456789"
	gw := consoleGateway(t, `admin: {token: admin-token-0123456789abcdef}
auth:
  mode: tokens
  tokens:
    - {name: alice, token: `+echoOnly+`, agents: [echo]}
`)
	b := startBrowser(t, 1280, 900)
	b.Navigate(gw.Base + "/")
	b.WaitTrue("the token prompt", 15*time.Second, `!document.querySelector("#token-form").hidden && !document.querySelector("#agents-note").hidden`)
	var rows int
	b.MustEval(`document.querySelectorAll("#agents tbody tr").length`, &rows)
	if rows != 0 {
		t.Errorf("%d agents listed without a token", rows)
	}
	b.WaitTrue("operations locked", 10*time.Second, `document.querySelector("#ops-why").textContent.startsWith("401")`)

	b.MustEval(`document.querySelector("#token").value = `+jsString(echoOnly), nil)
	b.MustEval(`document.querySelector("#token-form").requestSubmit()`, nil)
	b.WaitTrue("echo listed and healthy", 15*time.Second, `document.querySelector('#agents tr[data-agent="echo"] .health[data-status="ok"]') !== null`)
	var names []string
	b.MustEval(`[...document.querySelectorAll("#agents tbody tr")].map(r => r.dataset.agent)`, &names)
	if strings.Join(names, ",") != "echo" {
		t.Errorf("agents listed for a token of echo only: %v", names)
	}
	var caller string
	b.MustEval(`document.querySelector("#caller").textContent`, &caller)
	if caller != "as alice" {
		t.Errorf("caller shown as %q", caller)
	}
	var storage struct {
		Session, Cookie string
		Local           int
	}
	b.MustEval(`({session: sessionStorage.getItem("pallasgw.console.token"), cookie: document.cookie, local: localStorage.length})`, &storage)
	if storage.Session != echoOnly || storage.Cookie != "" || storage.Local != 0 {
		t.Errorf("token storage: %+v (want it in sessionStorage only)", storage)
	}
	var page string
	b.MustEval(`document.documentElement.outerHTML`, &page)
	if strings.Contains(page, echoOnly) {
		t.Error("the token is in the page's DOM")
	}

	// The page's own client, with the token, on an agent it may not use.
	var outcome string
	b.MustEval(`import("./console/mcp.js").then(m => new m.McpClient("agents/oracle/mcp", () => sessionStorage.getItem("pallasgw.console.token"))
		.callTool("send_message", {message: "hi"})).then(() => "called", e => "refused " + e.status)`, &outcome)
	if outcome != "refused 403" {
		t.Errorf("calling oracle from the page with echo's token: %s", outcome)
	}
	b.MustEval(`import("./console/mcp.js").then(m => new m.McpClient("agents/echo/mcp", () => sessionStorage.getItem("pallasgw.console.token"))
		.callTool("send_message", {message: "hi"})).then(r => r.content[0].text, e => "refused " + e.status)`, &outcome)
	if outcome != "hi" {
		t.Errorf("calling echo from the page with its token: %s", outcome)
	}
	shot := filepath.Join(screenshotDir(t), "console-tokens.png")
	b.Screenshot(shot)
	t.Logf("screenshot: %s", shot)
	if v := b.CSPViolations(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", v)
	}
	if p := b.Problems(); len(p) > 0 {
		// The 401s and the 403 above are logged by Chromium as failed
		// loads; anything else is a problem.
		var other []string
		for _, s := range p {
			if !strings.Contains(s, "status of 401") && !strings.Contains(s, "status of 403") {
				other = append(other, s)
			}
		}
		if len(other) > 0 {
			t.Errorf("the page had problems:\n%s", strings.Join(other, "\n"))
		}
	}
}

func postReload(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/-/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
