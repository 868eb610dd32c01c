package integration

// Tool pins (SPEC §18): a downstream that changes a tool's description and
// input schema while the gateway runs (test/pinserver, over Streamable
// HTTP and legacy SSE in this process, and over stdio as a process of the
// gateway's), seen at the next tool-list read after its
// notifications/tools/list_changed.
// enforce hides the changed tool and refuses its calls until `pallasgw pins
// approve` (the real CLI) and a reload; warn serves and reports it; reject
// hides it in either mode and it is not reported again.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/pinserver"
)

// pinTransports are the downstream transports a pinned server is tested on.
var pinTransports = []string{"http", "sse", "stdio"}

// pinDict is the dictionary downstream (test/pinserver) over one transport:
// entry is its server entry's transport keys (YAML flow), dict the server
// itself when it runs in this process (http), nil over stdio.
type pinDict struct {
	entry string
	dict  *pinserver.Server
}

// newPinDict starts the dictionary for transport: in this process over
// Streamable HTTP or the legacy SSE transport, or as a command the gateway (and the CLI) start over
// stdio, its edition kept in a state file of dir.
func newPinDict(t *testing.T, transport, dir string) pinDict {
	t.Helper()
	if transport == "stdio" {
		bin := filepath.Join(t.TempDir(), "pinserver")
		if out, err := exec.Command("go", "build", "-o", bin, "./testdata/pinserver").CombinedOutput(); err != nil {
			t.Fatalf("building pinserver: %v\n%s", err, out)
		}
		return pinDict{entry: fmt.Sprintf("transport: stdio, command: %q, env: {PINSERVER_STATE: %q}", bin, filepath.Join(dir, "edition"))}
	}
	d := pinserver.New("")
	if transport == "sse" {
		sse := server.NewSSEServer(d.MCP)
		ts := httptest.NewServer(sse)
		t.Cleanup(ts.Close)
		t.Cleanup(func() { _ = sse.Shutdown(context.Background()) })
		return pinDict{entry: fmt.Sprintf("transport: sse, url: %q", ts.URL+"/sse"), dict: d}
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(d.MCP))
	t.Cleanup(ts.Close)
	return pinDict{entry: fmt.Sprintf("transport: http, url: %q", ts.URL+"/mcp"), dict: d}
}

// pinConfig is a gateway with the dictionary as server dict (pin_tools
// %[4]s), a proxy px and a toolbox tb in front of it, and the pins file
// %[2]s.
const pinConfig = `
name: pins
listen: "127.0.0.1:%[1]d"
reload: {poll_interval: 0}
pins: %[2]q
mcp:
  servers:
    dict: {%[3]s, timeout: 20s, pin_tools: %[4]s}
agents:
  px: {kind: proxy, servers: [dict]}
  tb: {kind: toolbox, servers: [dict]}
`

// pinGW is one gateway of a pin test and its config file.
type pinGW struct {
	*gw
	cfg string
}

// startPinGW writes pinConfig for entry and mode into a directory of its
// own and starts a gateway on it; pins is the pins file (which must exist:
// a gateway refuses to start without it).
func startPinGW(t *testing.T, entry, mode, pins string) *pinGW {
	t.Helper()
	port := freePorts(t, 1)[0]
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(pinConfig, port, pins, entry, mode)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &pinGW{gw: startGatewayAt(t, path, port), cfg: path}
}

// pinsCLI runs `pallasgw pins ARGS` (the built binary) and returns its
// stdout, stderr and exit code.
func pinsCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary(), append([]string{"pins"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pallasgw pins %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// mustPinsCLI runs `pallasgw pins ARGS` and fails the test unless it
// exits 0.
func mustPinsCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := pinsCLI(t, args...)
	if code != 0 {
		t.Fatalf("pallasgw pins %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// initPins writes the first pins of the pinned servers of the config at
// cfg (`pallasgw pins init`); the config's pins file is pins.
func initPins(t *testing.T, cfg, pins string) {
	t.Helper()
	out := mustPinsCLI(t, "init", "--config", cfg)
	if !strings.Contains(out, "wrote "+pins) {
		t.Fatalf("pins init: %s", out)
	}
}

// pinInitConfig is a config file for `pallasgw pins init` alone (nothing
// serves it): the pinned server dict with entry, the pins file pins.
func pinInitConfig(t *testing.T, entry, pins string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(pinConfig, 1, pins, entry, "enforce")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pinTools lists cs's tools by name.
func pinTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

// pinCall calls tool and returns its text and whether it was an isError
// result (a protocol error fails the test).
func pinCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return pxText(res), res.IsError
}

// lookupDescription is the description of lookup in the list ("" when it
// is not listed).
func lookupDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	if tl := pinTools(t, cs)["lookup"]; tl != nil {
		return tl.Description
	}
	return ""
}

// mutate makes the dictionary change lookup to edition ed (through the
// proxy: the stdio server is the gateway's own process).
func mutate(t *testing.T, cs *mcp.ClientSession, ed int) {
	t.Helper()
	if text, isErr := pinCall(t, cs, "mutate", map[string]any{"to": ed}); isErr || text != fmt.Sprintf("lookup is now edition %d", ed) {
		t.Fatalf("mutate to %d: %q (isError %v)", ed, text, isErr)
	}
}

// pendingTools is /-/status's pending_tools.
func (g *gw) pendingTools(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	raw, _ := json.Marshal(g.status(t)["pending_tools"])
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("pending_tools %s: %v", raw, err)
	}
	return out
}

// mustReload posts /-/reload and fails the test unless it succeeded.
func (g *gw) mustReload(t *testing.T) {
	t.Helper()
	if code, body := g.reload(t); code != 200 {
		t.Fatalf("reload: %d %v", code, body)
	}
}

// pinSeries are the pin metrics of server dict.
const (
	seriesMismatches = `pallasgw_tool_pin_mismatches_total{server="dict"}`
	seriesPending    = `pallasgw_tool_pins_pending{server="dict"}`
)

// TestPinsEnforce: the changed lookup is hidden from the proxy's list and
// the toolbox's, its calls are refused with an error naming it and saying
// it awaits approval, it is reported; `pallasgw pins approve` and a reload
// serve the new definition.
func TestPinsEnforce(t *testing.T) {
	for _, transport := range pinTransports {
		t.Run(transport, func(t *testing.T) {
			t.Parallel() // each transport has its own gateway, server and files
			dir := t.TempDir()
			d := newPinDict(t, transport, dir)
			pins := filepath.Join(dir, "pins.yaml")
			g := startPinGWInit(t, d.entry, "enforce", pins)
			px := pxConnect(t, g.Base+"/agents/px/mcp", "", nil, nil)
			tb := pxConnect(t, g.Base+"/agents/tb/mcp", "", nil, nil)

			if got := pxToolNames(t, px); !slices.Equal(got, []string{"get_health", "lookup", "mutate", "stable"}) {
				t.Fatalf("approved tools: %v", got)
			}
			if text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat"}); isErr || text != "lookup v1: cat" {
				t.Fatalf("lookup before the change: %q (isError %v)", text, isErr)
			}
			mutate(t, px, 2)
			eventually(t, 10*time.Second, "lookup hidden from the proxy's list", func() bool { return lookupDescription(t, px) == "" })
			if got := pxToolNames(t, px); !slices.Equal(got, []string{"get_health", "mutate", "stable"}) {
				t.Errorf("tools after the change: %v", got)
			}
			text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat"})
			if !isErr || !strings.Contains(text, `tool "lookup"`) || !strings.Contains(text, "awaits approval") || strings.Contains(text, "lookup v2") {
				t.Errorf("a call of the changed tool through the proxy: %q (isError %v)", text, isErr)
			}
			if d.dict != nil && d.dict.Calls("lookup") != 1 {
				t.Errorf("the downstream's lookup ran %d times, want once (before the change)", d.dict.Calls("lookup"))
			}
			if text, isErr := pinCall(t, px, "stable", nil); isErr || text != "stable" {
				t.Errorf("an unchanged tool: %q (isError %v)", text, isErr)
			}

			o := tbCall(t, tb, "get_server_tools", map[string]any{"agent_id": "it", "server": "dict"})
			if got := o.toolNames(); o.isError || slices.Contains(got, "lookup") || !slices.Contains(got, "stable") {
				t.Errorf("toolbox get_server_tools: %v (%s)", got, o.text)
			}
			o = tbCall(t, tb, "execute_tool", map[string]any{"agent_id": "it", "server": "dict", "tool": "lookup", "args": map[string]any{"word": "cat"}})
			if !o.isError || !strings.Contains(o.text, `"lookup"`) || !strings.Contains(o.text, "awaits approval") {
				t.Errorf("toolbox execute_tool of the changed tool: %q (isError %v, code %s)", o.text, o.isError, o.code())
			}

			g.waitSeries(t, seriesMismatches, 1)
			g.waitSeries(t, seriesPending, 1)
			pending := g.pendingTools(t)
			if len(pending) != 1 || pending[0]["server"] != "dict" || pending[0]["tool"] != "lookup" || pending[0]["kind"] != "changed" ||
				pending[0]["mode"] != "enforce" || pending[0]["hidden"] != true || pending[0]["pinned_hash"] == pending[0]["hash"] {
				t.Errorf("/-/status pending_tools: %v", pending)
			}
			if !g.logged(`"msg":"tool definition awaits approval","server":"dict","tool":"lookup","kind":"changed"`) || !g.logged(`"action":"hidden"`) {
				t.Errorf("no audit line for the hidden change")
			}

			out, _, code := pinsCLI(t, "diff", "--config", g.cfg)
			if code != 1 || !strings.Contains(out, "dict/lookup: changed") || !strings.Contains(out, pinserver.Description(2)) {
				t.Errorf("pins diff: exit %d\n%s", code, out)
			}
			if out := mustPinsCLI(t, "approve", "--config", g.cfg, "dict", "lookup"); !strings.Contains(out, "dict/lookup: approved sha256:") {
				t.Errorf("pins approve: %s", out)
			}
			g.mustReload(t)
			eventually(t, 10*time.Second, "the approved lookup in the list", func() bool { return lookupDescription(t, px) == pinserver.Description(2) })
			if text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat", "lang": "fr"}); isErr || text != "lookup v2: cat" {
				t.Errorf("lookup after its approval: %q (isError %v)", text, isErr)
			}
			o = tbCall(t, tb, "get_server_tools", map[string]any{"agent_id": "it", "server": "dict"})
			if got := o.toolNames(); !slices.Contains(got, "lookup") {
				t.Errorf("toolbox get_server_tools after the approval: %v", got)
			}
			g.waitSeries(t, seriesPending, 0)
			if p := g.pendingTools(t); len(p) != 0 {
				t.Errorf("pending_tools after the approval: %v", p)
			}
			if out, _, code := pinsCLI(t, "diff", "--config", g.cfg); code != 0 || !strings.Contains(out, "every live definition matches its pin") {
				t.Errorf("pins diff after the approval: exit %d\n%s", code, out)
			}
		})
	}
}

// startPinGWInit writes the first pins (`pallasgw pins init` on the
// gateway's own config) and starts the gateway.
func startPinGWInit(t *testing.T, entry, mode, pins string) *pinGW {
	t.Helper()
	initPins(t, pinInitConfig(t, entry, pins), pins)
	return startPinGW(t, entry, mode, pins)
}

// TestPinsWarn: the changed lookup is served and reported; `pallasgw pins
// reject` and a reload hide it (in warn too) and it is not reported again
// until the definition changes again.
func TestPinsWarn(t *testing.T) {
	for _, transport := range pinTransports {
		t.Run(transport, func(t *testing.T) {
			t.Parallel() // each transport has its own gateway, server and files
			dir := t.TempDir()
			d := newPinDict(t, transport, dir)
			pins := filepath.Join(dir, "pins.yaml")
			g := startPinGWInit(t, d.entry, "warn", pins)
			px := pxConnect(t, g.Base+"/agents/px/mcp", "", nil, nil)

			if got := lookupDescription(t, px); got != pinserver.Description(1) {
				t.Fatalf("lookup before the change: %q", got)
			}
			mutate(t, px, 2)
			eventually(t, 10*time.Second, "the changed lookup in the list", func() bool { return lookupDescription(t, px) == pinserver.Description(2) })
			if tl := pinTools(t, px)["lookup"]; tl == nil || !strings.Contains(fmt.Sprint(tl.InputSchema), pinserver.LangParam) {
				t.Errorf("lookup's schema after the change: %+v", tl)
			}
			if text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat"}); isErr || text != "lookup v2: cat" {
				t.Errorf("warn serves the changed tool: %q (isError %v)", text, isErr)
			}
			g.waitSeries(t, seriesMismatches, 1)
			g.waitSeries(t, seriesPending, 1)
			pending := g.pendingTools(t)
			if len(pending) != 1 || pending[0]["tool"] != "lookup" || pending[0]["kind"] != "changed" || pending[0]["mode"] != "warn" || pending[0]["hidden"] != false {
				t.Errorf("/-/status pending_tools: %v", pending)
			}
			rejected, _ := pending[0]["hash"].(string)
			if !g.logged(`"msg":"tool definition awaits approval","server":"dict","tool":"lookup","kind":"changed","hash":"`+rejected) || !g.logged(`"action":"served"`) {
				t.Errorf("no audit line for the served change")
			}

			if out := mustPinsCLI(t, "reject", "--config", g.cfg, "dict", "lookup"); !strings.Contains(out, "dict/lookup: rejected "+rejected) {
				t.Errorf("pins reject: %s", out)
			}
			g.mustReload(t) // also drops the cached lists: the next one is read again
			eventually(t, 10*time.Second, "the rejected lookup hidden", func() bool { return lookupDescription(t, px) == "" })
			text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat"})
			if !isErr || !strings.Contains(text, `tool "lookup"`) || !strings.Contains(text, "rejected") {
				t.Errorf("a call of the rejected tool: %q (isError %v)", text, isErr)
			}
			g.waitSeries(t, seriesPending, 0)
			if p := g.pendingTools(t); len(p) != 0 {
				t.Errorf("pending_tools after the rejection: %v", p)
			}
			if out, _, code := pinsCLI(t, "diff", "--config", g.cfg); code != 0 || !strings.Contains(out, "dict/lookup: rejected "+rejected+" (hidden)") {
				t.Errorf("pins diff after the rejection: exit %d\n%s", code, out)
			}
			// The same definition again (re-registered: list_changed, the
			// list read again) is not reported again.
			mutate(t, px, 2)
			pinCall(t, px, "stable", nil)
			if got := lookupDescription(t, px); got != "" {
				t.Errorf("the rejected definition listed again: %q", got)
			}
			// A new change is reported, and served (warn).
			mutate(t, px, 3)
			eventually(t, 10*time.Second, "edition 3 in the list", func() bool { return lookupDescription(t, px) == pinserver.Description(3) })
			g.waitSeries(t, seriesMismatches, 2)
			g.waitSeries(t, seriesPending, 1)
			if n := strings.Count(g.allLogs(), `"hash":"`+rejected+`","pinned_hash"`); n != 1 {
				t.Errorf("the rejected definition has %d audit lines, want 1", n)
			}
		})
	}
}

// TestPinsReplicas: two gateways reading one pins file (the shared volume
// or ConfigMap of a deployment) hide the same change, and after an
// approval, then a rejection, and their reloads, serve and hide the same.
func TestPinsReplicas(t *testing.T) {
	dir := t.TempDir()
	d := newPinDict(t, "http", dir)
	pins := filepath.Join(dir, "pins.yaml")
	a := startPinGWInit(t, d.entry, "enforce", pins)
	b := startPinGW(t, d.entry, "enforce", pins)
	pa := pxConnect(t, a.Base+"/agents/px/mcp", "", nil, nil)
	pb := pxConnect(t, b.Base+"/agents/px/mcp", "", nil, nil)
	both := func(what string, want string) {
		t.Helper()
		for i, cs := range []*mcp.ClientSession{pa, pb} {
			eventually(t, 10*time.Second, fmt.Sprintf("replica %d: %s", i+1, what), func() bool { return lookupDescription(t, cs) == want })
		}
	}
	both("edition 1 listed", pinserver.Description(1))
	mutate(t, pa, 2) // the downstream tells both replicas' sessions
	both("edition 2 hidden", "")
	for i, g := range []*pinGW{a, b} {
		if p := g.pendingTools(t); len(p) != 1 || p[0]["tool"] != "lookup" || p[0]["hidden"] != true {
			t.Errorf("replica %d: pending_tools %v", i+1, p)
		}
	}
	mustPinsCLI(t, "approve", "--config", a.cfg, "dict", "lookup")
	a.mustReload(t)
	b.mustReload(t)
	both("edition 2 approved", pinserver.Description(2))
	for i, cs := range []*mcp.ClientSession{pa, pb} {
		if text, isErr := pinCall(t, cs, "lookup", map[string]any{"word": "dog"}); isErr || text != "lookup v2: dog" {
			t.Errorf("replica %d: lookup %q (isError %v)", i+1, text, isErr)
		}
	}
	mutate(t, pb, 3)
	both("edition 3 hidden", "")
	mustPinsCLI(t, "reject", "--config", b.cfg, "dict", "lookup")
	a.mustReload(t)
	b.mustReload(t)
	both("edition 3 still hidden after its rejection", "")
	for i, g := range []*pinGW{a, b} {
		g.waitSeries(t, seriesPending, 0)
		if p := g.pendingTools(t); len(p) != 0 {
			t.Errorf("replica %d: pending_tools after the rejection %v", i+1, p)
		}
		cs := []*mcp.ClientSession{pa, pb}[i]
		if text, isErr := pinCall(t, cs, "lookup", map[string]any{"word": "dog"}); !isErr || !strings.Contains(text, "rejected") {
			t.Errorf("replica %d: a call of the rejected lookup: %q (isError %v)", i+1, text, isErr)
		}
	}
}

// TestPinsLLMAgent: an llm agent's model is offered the approved
// definition, never the changed one while it awaits approval (the fake
// provider's journal holds every request body), and the approved change
// after `pallasgw pins approve` and a reload.
func TestPinsLLMAgent(t *testing.T) {
	dir := t.TempDir()
	d := newPinDict(t, "http", dir)
	pins := filepath.Join(dir, "pins.yaml")
	initPins(t, pinInitConfig(t, d.entry, pins), pins)
	e := startLLM(t, "  reader: {servers: [dict]}\n  px: {kind: proxy, servers: [dict]}\n", llmOpts{
		extraTop: fmt.Sprintf("pins: %q\n", pins),
		// One session for every caller: the proxy's listing below is the
		// agent's too.
		extraMCP: fmt.Sprintf("    dict: {%s, timeout: 20s, pin_tools: enforce, session_scope: shared}\n", d.entry),
	})
	px := pxConnect(t, e.Base+"/agents/px/mcp", "", nil, nil)
	journal := func(from int) []string { // the request bodies since from
		var out []string
		for _, r := range e.oai.ChatRequests()[from:] {
			out = append(out, string(r.Body))
		}
		return out
	}

	n := len(e.oai.ChatRequests())
	e.oai.Script(fakellm.Text("one"))
	if got := e.answer(t, "reader", "look up cat"); got != "one" {
		t.Fatalf("answer %q", got)
	}
	reqs := e.oai.ChatRequests()[n:]
	if len(reqs) != 1 || !strings.Contains(toolsOffered(reqs[0]), "dict__lookup") || !strings.Contains(string(reqs[0].Body), pinserver.Description(1)) {
		t.Fatalf("the approved edition is not offered: %d requests, tools %s", len(reqs), toolsOffered(reqs[0]))
	}

	mutate(t, px, 2)
	eventually(t, 10*time.Second, "lookup hidden", func() bool { return lookupDescription(t, px) == "" })
	n = len(e.oai.ChatRequests())
	e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "l-1", Name: "dict__lookup", Args: callArgs(`{"word":"cat","lang":"fr"}`)}), fakellm.Text("two"))
	if got := e.answer(t, "reader", "look up cat in French"); got != "two" {
		t.Fatalf("answer %q", got)
	}
	reqs = e.oai.ChatRequests()[n:]
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, body := range journal(n) {
		if strings.Contains(toolsOffered(reqs[i]), "dict__lookup") || strings.Contains(body, pinserver.Description(2)) || strings.Contains(body, pinserver.LangParam) {
			t.Errorf("request %d shows the unapproved definition (tools %s):\n%s", i+1, toolsOffered(reqs[i]), body)
		}
		if !strings.Contains(toolsOffered(reqs[i]), "dict__stable") {
			t.Errorf("request %d does not offer the approved tools: %s", i+1, toolsOffered(reqs[i]))
		}
	}
	if res, ok := findToolResult(reqs[1], "l-1"); !ok || !res.IsError {
		t.Errorf("the model's call of the unapproved tool: %+v (found %v)", res, ok)
	}
	if c := d.dict.Calls("lookup"); c != 0 {
		t.Errorf("the downstream's lookup ran %d times", c)
	}

	mustPinsCLI(t, "approve", "--config", e.ConfigPath, "dict", "lookup")
	e.mustReload(t)
	eventually(t, 10*time.Second, "lookup approved", func() bool { return lookupDescription(t, px) == pinserver.Description(2) })
	n = len(e.oai.ChatRequests())
	e.oai.Script(fakellm.Text("three"))
	if got := e.answer(t, "reader", "look up cat"); got != "three" {
		t.Fatalf("answer %q", got)
	}
	if body := journal(n)[0]; !strings.Contains(body, pinserver.Description(2)) || !strings.Contains(body, pinserver.LangParam) {
		t.Errorf("the approved edition 2 is not offered:\n%s", body)
	}
}
