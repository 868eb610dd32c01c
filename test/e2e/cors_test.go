//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corsConfig lets one page origin, http://ui.test:<page port>, call the
// agents with a token. Chromium resolves ui.test (and evil.test) to
// 127.0.0.1, so the page is on another origin than the gateway and not a
// loopback name: only allowed_origins lets it through.
const corsConfig = `name: cors
listen: "127.0.0.1:{{PORT}}"
allowed_origins: ["http://ui.test:{{PAGE}}"]
auth:
  mode: tokens
  tokens:
    - {name: web-ui, token: web-ui-token-0123456789abcdef, agents: ["*"]}
models:
  default: passthrough
agents:
  echo: {description: Answers with your own message., model: passthrough}
`

// corsPage calls the agent named in its query with the TypeScript SDK
// (bundled from @modelcontextprotocol/sdk by rolldown) and reports the
// outcome as JSON in document.title and in the page.
const corsPage = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>pending</title></head>
<body><h1>MCP from another origin</h1><pre id="out">pending</pre>
<script type="module">
import { Client, StreamableHTTPClientTransport } from "./sdk.js";
const q = new URLSearchParams(location.search);
const report = (v) => { const s = JSON.stringify(v); document.getElementById("out").textContent = JSON.stringify(v, null, 2); document.title = s; };
try {
  const transport = new StreamableHTTPClientTransport(new URL(q.get("url")),
    { requestInit: { headers: { Authorization: "Bearer " + q.get("token") } } });
  const client = new Client({ name: "cors-page", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  const res = await client.callTool({ name: "send_message", arguments: { message: "hello from " + location.origin } });
  report({ ok: true, origin: location.origin, sessionId: transport.sessionId || "",
    protocolVersion: transport.protocolVersion || "", tools: tools.tools.map((t) => t.name),
    answer: res.content.map((c) => c.text || "").join("") });
  await transport.terminateSession().catch(() => {});
} catch (e) {
  report({ ok: false, origin: location.origin, error: String(e && e.message || e) });
}
</script></body></html>
`

// bundleSDK bundles the SDK's browser client (Client and the Streamable
// HTTP transport) into one ES module with rolldown (installed with the
// inspector's vite) and returns its bytes.
func bundleSDK(t *testing.T) []byte {
	t.Helper()
	node := nodeBin(t)
	cli := npmFile(t, "rolldown", "bin/cli.mjs")
	sdk := npmFile(t, "@modelcontextprotocol/sdk", "dist/esm/client/index.js")
	dir := t.TempDir()
	entry := writeFile(t, dir, "entry.mjs", fmt.Sprintf("export { Client } from %q;\nexport { StreamableHTTPClientTransport } from %q;\n",
		sdk, filepath.Join(filepath.Dir(sdk), "streamableHttp.js")))
	out := filepath.Join(dir, "sdk.js")
	cmd := exec.Command(node, cli, entry, "--file", out, "--format", "esm", "--platform", "browser")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rolldown: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrowserCORS loads a page from another origin in headless Chromium
// and has it call an agent with the TypeScript SDK: with its origin in
// allowed_origins the preflights pass, the SDK reads Mcp-Session-Id, and
// the tools and the answer come back; from an origin not listed the
// browser gets no CORS header and the SDK fails. Saves cors.png.
func TestBrowserCORS(t *testing.T) {
	sdk := bundleSDK(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pagePort := ln.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("/index.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(corsPage))
	})
	mux.HandleFunc("/sdk.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(sdk)
	})
	pages := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go pages.Serve(ln)
	t.Cleanup(func() { pages.Close() })

	g := startGateway(t, strings.ReplaceAll(corsConfig, "{{PAGE}}", fmt.Sprint(pagePort)))
	b := startBrowser(t, 900, 600, "--host-resolver-rules=MAP ui.test 127.0.0.1, MAP evil.test 127.0.0.1")
	agent := g.Base + "/agents/echo/mcp"
	type outcome struct {
		OK              bool     `json:"ok"`
		Origin          string   `json:"origin"`
		SessionID       string   `json:"sessionId"`
		ProtocolVersion string   `json:"protocolVersion"`
		Tools           []string `json:"tools"`
		Answer          string   `json:"answer"`
		Error           string   `json:"error"`
	}
	run := func(host string) outcome {
		t.Helper()
		page := fmt.Sprintf("http://%s:%d/index.html?url=%s&token=%s", host, pagePort, agent, "web-ui-token-0123456789abcdef")
		b.Navigate(page)
		b.WaitTrue("the page's report", 60*time.Second, `document.title !== "pending"`)
		var title string
		b.MustEval(`document.title`, &title)
		var o outcome
		if err := json.Unmarshal([]byte(title), &o); err != nil {
			t.Fatalf("page title %q: %v", title, err)
		}
		t.Logf("page on %s reports %s", host, title)
		return o
	}

	o := run("ui.test")
	shot := filepath.Join(screenshotDir(t), "cors.png")
	b.Screenshot(shot)
	t.Logf("screenshot: %s", shot)
	if !o.OK || o.Origin != fmt.Sprintf("http://ui.test:%d", pagePort) {
		t.Fatalf("allowed origin: %+v", o)
	}
	if o.SessionID == "" {
		t.Errorf("the SDK could not read Mcp-Session-Id (not exposed): %+v", o)
	}
	if len(o.Tools) == 0 || !strings.Contains(o.Answer, "hello from http://ui.test") {
		t.Errorf("tools %v, answer %q", o.Tools, o.Answer)
	}
	for _, p := range b.Problems() {
		// The SDK opens the optional GET stream; the stateless endpoint
		// answers 405, as the transport allows, and the SDK goes on.
		if !strings.Contains(p, "405 (Method Not Allowed) ("+agent+")") {
			t.Errorf("the allowed page logged a problem: %s", p)
		}
	}

	o = run("evil.test")
	if o.OK || o.Error == "" {
		t.Errorf("an origin not in allowed_origins called the agent: %+v", o)
	}
	code, h, _ := mustGet(t, agent, map[string]string{"Origin": fmt.Sprintf("http://evil.test:%d", pagePort)})
	if code != http.StatusForbidden || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("evil.test: %d, Access-Control-Allow-Origin %q", code, h.Get("Access-Control-Allow-Origin"))
	}
}
