//go:build e2e

package e2e

// The mixed-version pool (issue 41's compatibility harness): a replica of
// the base commit (compatBase, built from `git archive` once and cached)
// and a replica of the working tree behind the shipped nginx config,
// round-robin, sharing state_key and a redis-server (sessions.store).
// Everything one replica makes and another uses is made by one version
// and used by the other, both ways: session ids, the sessions.store's
// keys (the downstream session a caller's session adopts, the tasks
// index), answers published on `answers:<replica>`, sealed requestStates
// (envelope, additional data, roundState, argsDigest, ask keys), a chain's
// checkpoint (stepCheckpoint and its Kind), and task ids (their tag).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/gwtest"
)

// compatBase is the commit whose build runs beside the working tree's:
// what a rolling upgrade from it meets. PALLASGW_COMPAT_BASE overrides it
// (any commit git can name).
const compatBase = "d28b184"

// baseBinary builds cmd/pallasgw (race-enabled, as TestMain's) at the base
// commit from `git archive` into a temporary directory, once per commit:
// the binary is kept in $PALLASGW_COMPAT_CACHE, by default
// $PALLASGW_E2E_TOOLS/compat, under the commit's full hash. Without git or
// the commit (a shallow clone) the test skips, or fails under
// PALLASGW_E2E_REQUIRE=1.
func baseBinary(t *testing.T) (commit, bin string) {
	t.Helper()
	base := compatBase
	if c := os.Getenv("PALLASGW_COMPAT_BASE"); c != "" {
		base = c
	}
	out, err := exec.Command("git", "-C", repoDir, "rev-parse", "--verify", "--quiet", base+"^{commit}").Output()
	if err != nil {
		err = fmt.Errorf("git rev-parse %s: %v (a shallow clone? fetch it)", base, err)
	}
	need(t, "the base commit "+base, err)
	commit = strings.TrimSpace(string(out))
	cache := os.Getenv("PALLASGW_COMPAT_CACHE")
	if cache == "" {
		cache = filepath.Join(toolsDir(), "compat")
	}
	bin = filepath.Join(cache, commit, "pallasgw")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		return commit, bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", repoDir, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var errs, untarErrs bytes.Buffer
	archive.Stderr, untar.Stderr = &errs, &untarErrs
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, errs.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v\n%s", commit, err, untarErrs.String())
	}
	start := time.Now()
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid()) // renamed into place: a concurrent run finds it whole or not at all
	build := exec.Command("go", "build", "-race", "-o", tmp, "./cmd/pallasgw")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building pallasgw at %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built pallasgw at %s in %s into %s", commit[:12], time.Since(start).Round(time.Second), bin)
	return commit, bin
}

// compatConfig is the pool's one config: a proxy in front of the go-sdk
// conformance server (session-based: test_elicitation, and a downstream
// session per caller kept in the store) and of an mcp-go server with a
// task tool; a chain whose second step (an llm agent on a fake model)
// calls test_elicitation.
const compatConfig = `
name: compat
namespace: dev.pallasgw.e2e
listen: "127.0.0.1:{{PORT}}"
trusted_proxies: ["127.0.0.1/32", "::1/128"]
state_key: %q
sessions: {store: %q}
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-test", timeout: 60s}
    second: {type: openai, base_url: %q, api_key: "sk-test", timeout: 60s}
mcp:
  servers:
    down: {url: %q, timeout: 60s}
    tasky: {url: %q, timeout: 60s}
agents:
  px: {kind: proxy, servers: [down, tasky]}
  asker: {kind: llm, servers: [down]}
  prep: {kind: llm, model: second.fake-model}
  pipe: {kind: chain, sequence: [prep, asker]}
`

// bearer is the Authorization of caller who (a token of compatConfig).
func bearer(who string) string { return "Bearer " + who + "-token-0123456789abcdef" }

// compatWay is one direction: a caller's state made by one version and
// used by the other. Each has its caller, so that each version makes the
// first downstream session of one caller, which the other adopts.
type compatWay struct{ first, then, who string }

var compatWays = []compatWay{{"old", "new", "web"}, {"new", "old", "ops"}}

// compatPool is the two replicas behind nginx: the proxy's address, and
// which replica (by port) is which version.
type compatPool struct {
	nginx   string // http://127.0.0.1:port
	version map[string]string
	gw      map[string]*gwtest.Gateway // by version
}

// served names the version that answered resp (nginx's upstream).
func (p *compatPool) served(h http.Header) string {
	up := h.Get("X-Pallasgw-Upstream")
	if v, ok := p.version[up]; ok {
		return v
	}
	return "?" + up
}

// onto makes the next request through nginx go to version want: round
// robin over two upstreams alternates, and the test alone sends requests
// through it, so after a request that went to the other the next is want's.
func (p *compatPool) onto(t *testing.T, want string) {
	t.Helper()
	for range 3 {
		code, h, body, err := get(p.nginx+"/readyz", nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET /readyz through nginx: %d %v %s", code, err, body)
		}
		if p.served(h) != want {
			return
		}
	}
	t.Fatalf("nginx sent three requests in a row to %s: not round-robin", want)
}

// rpc is one JSON-RPC POST through nginx that must land on version want
// (onto first); it returns the HTTP status and the answer to id (a JSON
// body, or the SSE event that answers id).
func (p *compatPool) rpc(t *testing.T, want, path string, hdr map[string]string, msg map[string]any) (int, http.Header, map[string]any) {
	t.Helper()
	p.onto(t, want)
	body, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.nginx+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", bearer("web"))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s (%v): %v", path, msg["method"], err)
	}
	defer resp.Body.Close()
	if got := p.served(resp.Header); got != want {
		t.Fatalf("POST %s (%v) went to %s, want %s", path, msg["method"], got, want)
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusAccepted && len(bytes.TrimSpace(raw)) == 0 {
		return resp.StatusCode, resp.Header, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = sseAnswer(raw, msg["id"])
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s (%v) on %s: HTTP %d %q: %v", path, msg["method"], want, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, resp.Header, out
}

// sseAnswer is the data of the event of stream that answers id (or the
// last one).
func sseAnswer(stream []byte, id any) []byte {
	var last []byte
	idJSON, _ := json.Marshal(id)
	for _, line := range strings.Split(string(stream), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
			last = []byte(d)
			if strings.Contains(d, `"id":`+string(idJSON)) && !strings.Contains(d, `"method"`) {
				return last
			}
		}
	}
	return last
}

// compatMeta is the _meta of a 2026-07-28 request declaring caps.
func compatMeta(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-compat", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps}
}

// modernParams are a 2026-07-28 tools/call's params, with extra
// (requestState, inputResponses, task).
func modernParams(name string, args, caps map[string]any, extra map[string]any) map[string]any {
	params := map[string]any{"name": name, "arguments": args, "_meta": compatMeta(caps)}
	for k, v := range extra {
		params[k] = v
	}
	return params
}

func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// modern is one 2026-07-28 request on version want.
func (p *compatPool) modern(t *testing.T, who, want, agent, method string, id int, params map[string]any) (int, map[string]any) {
	t.Helper()
	name, _ := params["name"].(string)
	hdr := modernHeaders(method, name)
	hdr["Authorization"] = bearer(who)
	status, _, msg := p.rpc(t, want, "/agents/"+agent+"/mcp", hdr,
		map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return status, msg
}

func resultOf(t *testing.T, what string, msg map[string]any) map[string]any {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	if res == nil {
		t.Fatalf("%s: no result: %v", what, msg)
	}
	return res
}

// inputRound checks that msg asks one elicitation and returns its key
// and the requestState.
func inputRound(t *testing.T, what string, msg map[string]any) (string, string) {
	t.Helper()
	res := resultOf(t, what, msg)
	reqs, _ := res["inputRequests"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || len(reqs) != 1 || state == "" {
		t.Fatalf("%s: want input_required with one request, got %v", what, msg)
	}
	for k, v := range reqs {
		if m, _ := v.(map[string]any); m["method"] != "elicitation/create" {
			t.Fatalf("%s: input request %s: %v", what, k, v)
		}
		return k, state
	}
	return "", ""
}

func textOfResult(t *testing.T, what string, msg map[string]any) string {
	t.Helper()
	res := resultOf(t, what, msg)
	if res["isError"] == true || (res["resultType"] != nil && res["resultType"] != "complete") {
		t.Fatalf("%s: want a complete result, got %v", what, msg)
	}
	b, _ := json.Marshal(res["content"])
	return string(b)
}

// startTaskServer is an mcp-go downstream (stateless) with a task tool,
// hold, that finishes once release is closed (as test/integration's
// taskDown).
func startTaskServer(t *testing.T) (url string, release chan struct{}) {
	t.Helper()
	release, stop := make(chan struct{}), make(chan struct{})
	s := server.NewMCPServer("taskdown", "1", server.WithToolCapabilities(false), server.WithTaskCapabilities(true, true, true))
	s.AddTool(mcpgo.NewTool("hold", mcpgo.WithTaskSupport(mcpgo.TaskSupportOptional)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			select {
			case <-release:
				return mcpgo.NewToolResultText("held and released"), nil
			case <-stop:
				return nil, fmt.Errorf("test over")
			}
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	t.Cleanup(func() { close(stop); ts.Close() })
	return ts.URL + "/mcp", release
}

// TestCompatMixedVersions: the base commit's build and the working tree's
// as two replicas of one pool behind nginx.
func TestCompatMixedVersions(t *testing.T) {
	tool(t, "nginx")
	redisURL, _ := startRedis(t)
	commit, oldBin := baseBinary(t)
	down := startConformanceServer(t)
	taskURL, release := startTaskServer(t)
	asker, second := fakellm.New(t), fakellm.New(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(compatConfig, base64.StdEncoding.EncodeToString(key), redisURL,
		asker.OpenAIBaseURL(), second.OpenAIBaseURL(), down, taskURL)

	ports := freePorts(t, 3)
	ngx := startNginxReplicas(t, nginxSite{listen: ports[2], upstream: "pallasgw", ports: ports[:2], upstreamHeader: true})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- nginx error.log:\n%s", tail(readFrom(ngx.errLog, 0), 3000))
		}
	})
	p := &compatPool{nginx: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), version: map[string]string{}, gw: map[string]*gwtest.Gateway{}}
	for i, v := range []struct{ name, bin string }{{"old", oldBin}, {"new", ""}} {
		o := replicaOptions(cfg, "", ports[i])
		o.Binary = v.bin
		p.gw[v.name] = gwtest.Start(t, o)
		p.version[fmt.Sprintf("127.0.0.1:%d", ports[i])] = v.name
	}
	t.Logf("old: pallasgw at %s on :%d; new: the working tree on :%d; nginx round-robin on :%d", commit[:12], ports[0], ports[1], ports[2])
	waitFor(t, "nginx to reach the pool", 15*time.Second, ngx.p, httpGetOK(p.nginx+"/readyz"))
	m := ngx.mark()

	elicitCaps := map[string]any{"elicitation": map[string]any{}}
	answer := map[string]any{"action": "accept", "content": map[string]any{"username": "alice"}}

	// A session-based caller initializes on one version and calls on
	// both in turn: its session id, and the downstream session it owns in
	// the store, made by one and used by the other; a downstream's
	// elicitation/create sent by one reaches the caller, whose answer
	// lands on the other and is published to the asker (answers:<replica>).
	t.Run("session", func(t *testing.T) {
		for _, w := range compatWays {
			t.Run(w.first+" to "+w.then+" ("+w.who+")", func(t *testing.T) {
				init := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
					"protocolVersion": "2025-11-25", "capabilities": elicitCaps, "clientInfo": map[string]any{"name": "e2e-compat", "version": "1"}}}
				_, h, msg := p.rpc(t, w.first, "/agents/px/mcp", map[string]string{"Authorization": bearer(w.who)}, init)
				resultOf(t, "initialize", msg)
				sid := h.Get("Mcp-Session-Id")
				if sid == "" {
					t.Fatalf("initialize on %s: no Mcp-Session-Id", w.first)
				}
				hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": bearer(w.who)}
				if status, _, _ := p.rpc(t, w.then, "/agents/px/mcp", hdr, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); status != http.StatusAccepted {
					t.Fatalf("notifications/initialized on %s: HTTP %d", w.then, status)
				}
				for i, v := range []string{w.first, w.then, w.first, w.then} {
					_, _, msg := p.rpc(t, v, "/agents/px/mcp", hdr, map[string]any{"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
						"params": map[string]any{"name": "down__test_simple_text", "arguments": map[string]any{}}})
					if got := textOfResult(t, "test_simple_text on "+v, msg); !strings.Contains(got, "text") {
						t.Errorf("call %d on %s answered %s", i, v, got)
					}
				}
				for _, v := range []string{w.first, w.then} {
					if got := p.elicitSession(t, w.who, v, sid); !strings.Contains(got, "action=accept") || !strings.Contains(got, "alice") {
						t.Errorf("elicitation asked by %s, answered through the other: %s", v, got)
					}
				}
			})
		}
	})

	// A 2026-07-28 caller's input_required round started on one version
	// is answered on the other, which replays the call from the
	// requestState the first sealed.
	t.Run("input required", func(t *testing.T) {
		for i, w := range compatWays {
			t.Run(w.first+" to "+w.then+" ("+w.who+")", func(t *testing.T) {
				args := map[string]any{"message": fmt.Sprintf("who are you (%s first)?", w.first)}
				_, msg := p.modern(t, w.who, w.first, "px", "tools/call", 100+i, modernParams("down__test_elicitation", args, elicitCaps, nil))
				k, state := inputRound(t, "first round on "+w.first, msg)
				if k != "elicitation-1" {
					t.Errorf("ask key %q, want elicitation-1", k)
				}
				before, _ := p.gw[w.then].Metric(`pallasgw_input_required_total{outcome="replayed"}`)
				_, msg = p.modern(t, w.who, w.then, "px", "tools/call", 200+i, modernParams("down__test_elicitation", args, elicitCaps,
					map[string]any{"requestState": state, "inputResponses": map[string]any{k: answer}}))
				if got := textOfResult(t, "retry on "+w.then, msg); !strings.Contains(got, "action=accept") || !strings.Contains(got, "alice") {
					t.Errorf("the retry on %s answered %s", w.then, got)
				}
				if after, _ := p.gw[w.then].Metric(`pallasgw_input_required_total{outcome="replayed"}`); after != before+1 {
					t.Errorf("replayed rounds on %s: %v → %v, want one more", w.then, before, after)
				}
			})
		}
	})

	// The downstream's own rounds (go-sdk's multi-round tool: the first
	// asked on the call's stream, the bridge's round; the second answered
	// natively as input_required, its requestState sealed inside ours)
	// alternate between the versions: first, then, first.
	t.Run("downstream rounds", func(t *testing.T) {
		for i, w := range compatWays {
			t.Run(w.first+" to "+w.then+" ("+w.who+")", func(t *testing.T) {
				const tool = "down__test_input_required_result_multi_round"
				reply := func(k, state, prop, v string) map[string]any {
					return map[string]any{"requestState": state, "inputResponses": map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{prop: v}}}}
				}
				through := `pallasgw_input_required_total{outcome="passed_through"}`
				back := `pallasgw_input_required_total{outcome="passed_back"}`
				throughBefore, _ := p.gw[w.then].Metric(through)
				backBefore, _ := p.gw[w.first].Metric(back)
				_, msg := p.modern(t, w.who, w.first, "px", "tools/call", 900+i, modernParams(tool, map[string]any{}, elicitCaps, nil))
				k1, s1 := inputRound(t, "round 1 on "+w.first, msg)
				_, msg = p.modern(t, w.who, w.then, "px", "tools/call", 910+i, modernParams(tool, map[string]any{}, elicitCaps, reply(k1, s1, "name", w.who)))
				k2, s2 := inputRound(t, "round 2 on "+w.then, msg)
				_, msg = p.modern(t, w.who, w.first, "px", "tools/call", 920+i, modernParams(tool, map[string]any{}, elicitCaps, reply(k2, s2, "color", "red")))
				if got := textOfResult(t, "round 3 on "+w.first, msg); !strings.Contains(got, w.who+" likes red") {
					t.Errorf("round 3 on %s answered %s, want %q", w.first, got, w.who+" likes red")
				}
				if n, _ := p.gw[w.then].Metric(through); n != throughBefore+1 {
					t.Errorf("%s passed the downstream's own round through %v times, want once", w.then, n-throughBefore)
				}
				if n, _ := p.gw[w.first].Metric(back); n != backBefore+1 {
					t.Errorf("%s passed the downstream's requestState back %v times, want once", w.first, n-backBefore)
				}
			})
		}
	})

	// A chain's round asked in its second step on one version continues
	// on the other from the checkpoint the state carries (the step and its
	// input): the first step does not run again.
	t.Run("workflow checkpoint", func(t *testing.T) {
		askTool := fakellm.ToolCalls(fakellm.Call{ID: "c1", Name: "down__test_elicitation", Args: json.RawMessage(`{"message":"your name?"}`)})
		for i, w := range compatWays {
			t.Run(w.first+" to "+w.then+" ("+w.who+")", func(t *testing.T) {
				prepBefore := len(second.ChatRequests())
				second.Script(fakellm.Text("prepared: greet"))
				asker.Script(askTool, askTool, fakellm.Text("hello, "+w.then))
				args := map[string]any{"message": "greet me"}
				_, msg := p.modern(t, w.who, w.first, "pipe", "tools/call", 300+i, modernParams("send_message", args, elicitCaps, nil))
				k, state := inputRound(t, "chain's first round on "+w.first, msg)
				if k != "step2-elicitation-1" {
					t.Errorf("ask key %q, want step2-elicitation-1", k)
				}
				_, msg = p.modern(t, w.who, w.then, "pipe", "tools/call", 400+i, modernParams("send_message", args, elicitCaps,
					map[string]any{"requestState": state, "inputResponses": map[string]any{k: answer}}))
				if got := textOfResult(t, "chain's retry on "+w.then, msg); !strings.Contains(got, "hello, "+w.then) {
					t.Errorf("the chain continued on %s answered %s", w.then, got)
				}
				if n := len(second.ChatRequests()) - prepBefore; n != 1 {
					t.Errorf("the chain's first step ran %d times, want once (the checkpoint skips it)", n)
				}
				if n := asker.Pending(); n != 0 {
					t.Errorf("%d scripted turns of the asking step left", n)
				}
			})
		}
	})

	// A task created on one version is read, listed (the store's index)
	// and, once done, fetched on the other, by the id (its tag) the first
	// made.
	t.Run("tasks", func(t *testing.T) {
		ids := map[string]string{}
		for i, w := range compatWays {
			_, msg := p.modern(t, w.who, w.first, "px", "tools/call", 500+i, modernParams("tasky__hold", map[string]any{}, map[string]any{},
				map[string]any{"task": map[string]any{"ttl": 600000}}))
			task, _ := resultOf(t, "task-augmented call on "+w.first, msg)["task"].(map[string]any)
			id, _ := task["taskId"].(string)
			if !strings.HasPrefix(id, "tasky/") || task["status"] != "working" {
				t.Fatalf("task created on %s: %v", w.first, msg)
			}
			ids[w.first] = id
			if s := p.taskStatus(t, w.who, w.then, id); s != "working" {
				t.Fatalf("task of %s read on %s: %s", w.first, w.then, s)
			}
		}
		for _, w := range compatWays {
			for _, v := range []string{"old", "new"} {
				_, msg := p.modern(t, w.who, v, "px", "tasks/list", 600, map[string]any{"_meta": compatMeta(map[string]any{})})
				listed, _ := json.Marshal(resultOf(t, "tasks/list on "+v, msg)["tasks"])
				if id := ids[w.first]; !strings.Contains(string(listed), `"`+id+`"`) {
					t.Errorf("%s's tasks/list on %s: %s, want the task it created on %s (%s)", w.who, v, listed, w.first, id)
				}
			}
		}
		close(release)
		for _, w := range compatWays {
			id := ids[w.first]
			for i := 0; ; i++ {
				s := p.taskStatus(t, w.who, w.then, id)
				if s == "completed" {
					break
				}
				if s != "working" || i == 1000 {
					t.Fatalf("task %s on %s: %s after %d polls", id, w.then, s, i)
				}
				time.Sleep(10 * time.Millisecond) // the polling interval
			}
			_, msg := p.modern(t, w.who, w.then, "px", "tasks/result", 700, map[string]any{"taskId": id,
				"_meta": compatMeta(map[string]any{})})
			res := resultOf(t, "tasks/result on "+w.then, msg)
			if b, _ := json.Marshal(res["content"]); !strings.Contains(string(b), "held and released") {
				t.Errorf("tasks/result on %s of the task of %s: %v", w.then, w.first, msg)
			}
		}
	})

	// The store's keys crossed: each version adopted a downstream session
	// the other made, and no session id was refused.
	for _, v := range []string{"old", "new"} {
		if n, _ := p.gw[v].Metric(`pallasgw_downstream_session_adoptions_total{server="down"}`); n < 1 {
			t.Errorf("%s adopted %v downstream sessions of the other, want at least 1", v, n)
		}
		mm, err := p.gw[v].Metrics()
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range mm {
			if strings.HasPrefix(k, "pallasgw_session_rejections_total{") && n > 0 {
				t.Errorf("%s rejected sessions: %s %v", v, k, n)
			}
			if strings.HasPrefix(k, "pallasgw_request_state_rejections_total{") && n > 0 {
				t.Errorf("%s refused requestStates: %s %v", v, k, n)
			}
		}
	}
	ngx.summarize(t, m, ports[2], "mixed versions")
}

// taskStatus is who's tasks/get of id on version v.
func (p *compatPool) taskStatus(t *testing.T, who, v, id string) string {
	t.Helper()
	_, msg := p.modern(t, who, v, "px", "tasks/get", 800, map[string]any{"taskId": id, "_meta": compatMeta(map[string]any{})})
	res := resultOf(t, "tasks/get on "+v, msg)
	if res["taskId"] != id {
		t.Fatalf("tasks/get %s on %s: taskId %v", id, v, res["taskId"])
	}
	s, _ := res["status"].(string)
	return s
}

// elicitSession calls test_elicitation in session sid on version asker,
// reads the call's SSE stream to the gateway's elicitation/create, POSTs
// the answer (round robin: to the other version) and returns the call's
// result text.
func (p *compatPool) elicitSession(t *testing.T, who, asker, sid string) string {
	t.Helper()
	p.onto(t, asker)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 50, "method": "tools/call",
		"params": map[string]any{"name": "down__test_elicitation", "arguments": map[string]any{"message": "who are you, " + asker + "?"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.nginx+"/agents/px/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", bearer(who))
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := p.served(resp.Header); got != asker || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("the eliciting call went to %s (want %s), HTTP %d %s", got, asker, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	other := map[string]string{"old": "new", "new": "old"}[asker]
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &msg) != nil {
			t.Fatalf("event %q", data)
		}
		switch {
		case msg.Method == "elicitation/create":
			var id string
			if json.Unmarshal(msg.ID, &id) != nil || !strings.HasPrefix(id, "pgw-r-") {
				t.Fatalf("elicitation/create with id %s", msg.ID)
			}
			status, _, ans := p.rpc(t, other, "/agents/px/mcp", map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25", "Authorization": bearer(who)},
				map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"action": "accept", "content": map[string]any{"username": "alice"}}})
			if status != http.StatusAccepted {
				t.Fatalf("the answer to %s's request, posted to %s: HTTP %d %v", asker, other, status, ans)
			}
		case string(msg.ID) == "50":
			var res struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			}
			if msg.Error != nil || json.Unmarshal(msg.Result, &res) != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("the eliciting call on %s: %s", asker, data)
			}
			return res.Content[0].Text
		}
	}
	t.Fatalf("the eliciting call's stream on %s ended without its answer: %v", asker, sc.Err())
	return ""
}
