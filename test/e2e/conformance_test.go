//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official conformance suite (@modelcontextprotocol/conformance, pinned
// in package.json; Node 22) runs its frozen requirement sets,
// `--requirements 2026-07-28` and `--requirements 2025-11-25`, against the
// Go SDK's conformance server directly and through a proxy agent, and the
// protocol-level scenarios against an llm agent. A scored check that fails
// fails the test unless it is listed in knownFailures with its reason;
// every scenario's score is logged.

// conformanceVersion is the suite version the scenario names and the known
// failures below were checked against.
const conformanceVersion = "0.2.0-alpha.12"

// knownFailure is a scored check allowed to fail, and why. scenario may end
// in "*" (a prefix); check "" means every check of the scenario.
// untestable: allowed only while the suite says it could not test the
// check ("Not testable: …"); any other failure of it is a real one.
type knownFailure struct {
	scenario, check, why string
	untestable           bool
}

func (k knownFailure) matches(scenario string, c check) bool {
	if p, ok := strings.CutSuffix(k.scenario, "*"); ok {
		if !strings.HasPrefix(scenario, p) {
			return false
		}
	} else if scenario != k.scenario {
		return false
	}
	if k.untestable && !strings.HasPrefix(c.ErrorMessage, "Not testable: ") {
		return false
	}
	return k.check == "" || k.check == c.ID
}

// bridgingFailures are the checks the input-required bridge
// cannot pass in front of a 2025-era, session-based downstream.
var bridgingFailures = []knownFailure{
	{"input-required-result-basic-elicitation", "sep-2322-elicitation-incomplete",
		"the suite wants the fixture's own key (\"user_name\") in inputRequests; go-sdk's fixture keys its InputRequests map \"user_name\", " +
			"but for a session-based (2025-11-25) client its serverMultiRoundTripMiddleware sends each entry as a plain elicitation/create " +
			"(ServerSession.Elicit with the ElicitParams only: no key, no _meta), so the key never reaches the gateway; the request's " +
			"schema names the property \"name\", not \"user_name\", so no derivation gives it without guessing; the gateway keys it " +
			"\"elicitation-1\" and the suite's retry under \"user_name\" still completes (answers are matched by kind): " +
			"sep-2322-elicitation-complete passes", false},
}

// agentFailures are the protocol-level checks an agent of a kind that is
// not a proxy (llm, chain, toolbox) is allowed to fail, and only as the
// suite's "Not testable": each needs one of the suite fixture's diagnostic
// tools (test_missing_capability, test_streaming_elicitation,
// test_logging_tool), which such an agent does not have (its tools are its
// message tool, or the toolbox's own, and get_health) and must not invent;
// a call of a name it does not have is -32602 "tool not found", as the MCP
// spec's tools page shows. What the checks stand for is tested on paths
// that exist: -32021 with HTTP 400 when a downstream of an llm agent's
// tool loop asks for a capability the caller did not declare
// (test/integration TestAgentInputRequiredNoCapability), input requests only as an
// input_required result, never a request on the call's stream, and no log
// message to a caller that set no log level. A proxy in front of a server
// that has the tools passes all four (TestConformanceThroughProxy).
var agentFailures = []knownFailure{
	{"server-stateless", "sep-2575-server-rejects-undeclared-capability", "needs the fixture's tool test_missing_capability", true},
	{"server-stateless", "sep-2575-missing-capability-http-400", "same", true},
	{"server-stateless", "sep-2575-http-server-no-independent-requests-on-stream", "needs the fixture's tool test_streaming_elicitation", true},
	{"server-stateless", "sep-2575-server-no-log-without-loglevel", "needs the fixture's tool test_logging_tool", true},
	// Not listed: sep-2575-server-sends-subscription-ack and
	// -tags-subscription-id, which mcp-go alone failed about one run in
	// eight (it could drop the acknowledgement when nothing is subscribed);
	// endpoint.AwaitListenAck closes that race. Nor caching: every kind
	// answers resources/list and resources/templates/list (empty lists).
}

// agentProtocolScenarios are the suite's protocol-level scenarios, run one
// by one against an agent of each kind at the revision named.
var agentProtocolScenarios = []struct{ scenario, rev string }{
	{"server-stateless", "2026-07-28"},
	{"caching", "2026-07-28"},
	{"dns-rebinding-protection", "2026-07-28"},
	{"dns-rebinding-protection", "2025-11-25"},
	// Pending in 2026-07-28 (run but unscored by --requirements); held
	// to the same rule here.
	{"http-header-validation", "2026-07-28"},
}

// check is one check of a scenario's checks.json.
type check struct {
	ID, Status, ErrorMessage string
}

// score is one scenario's result: checks by status, and the failed ones.
type score struct {
	passed, failed, warnings int
	failures                 []check
	retried                  bool
}

func (s score) String() string {
	r := fmt.Sprintf("%d passed, %d failed, %d warnings", s.passed, s.failed, s.warnings)
	if s.retried {
		r += " (retried alone)"
	}
	return r
}

// buildConformanceServer builds the Go SDK's conformance everything-server
// from the module cache (go-sdk is in this module's graph).
func buildConformanceServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	cmd.Dir = repoDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, out)
	}
	need(t, "the go-sdk conformance everything-server", err)
	return bin
}

// startConformanceServer runs it stateful (as the suite expects of a
// session-based server) and returns its MCP URL.
func startConformanceServer(t *testing.T) string {
	t.Helper()
	bin := buildConformanceServer(t)
	port := freePorts(t, 1)[0]
	p := startProc(t, "conformance everything-server", exec.Command(bin, "-http", fmt.Sprintf("127.0.0.1:%d", port), "-stateless=false"))
	waitFor(t, "the conformance server to listen", 30*time.Second, p, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// conformanceCLI returns node and the suite's entry point, skipping (or
// failing under PALLASGW_E2E_REQUIRE) when the installed suite is not the
// pinned version: the requirement sets and scenario names are its.
func conformanceCLI(t *testing.T) (node, cli string) {
	t.Helper()
	node = nodeBin(t)
	raw, err := os.ReadFile(npmFile(t, "@modelcontextprotocol/conformance", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version string }
	json.Unmarshal(raw, &pkg)
	if pkg.Version != conformanceVersion {
		err = fmt.Errorf("found %q in %s, want %s", pkg.Version, toolsDir(), conformanceVersion)
	}
	need(t, "npm package @modelcontextprotocol/conformance "+conformanceVersion, err)
	return node, npmFile(t, "@modelcontextprotocol/conformance", "dist/index.js")
}

// conformance runs the suite with args (after `server --url url`) and reads
// each scenario's checks.json.
func conformance(t *testing.T, url string, args ...string) map[string]score {
	t.Helper()
	node, cli := conformanceCLI(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli, "server", "--url", url, "-o", out}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance %v against %s timed out:\n%s", args, url, tail(string(log), 4000))
	}
	// A non-zero exit only means some check failed; the checks say which.
	_ = err
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		t.Fatalf("conformance %v wrote no results (%v):\n%s", args, err, tail(string(log), 4000))
	}
	stamp := regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	scores := map[string]score{}
	for _, e := range entries {
		m := stamp.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		var s score
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				s.passed++
			case "INFO":
				// The suite's own verdict when a server answers the three
				// concurrent POSTs as JSON: "SSE streaming is optional". The
				// gateway answers JSON unless something streams (as mcp-go
				// does); the go-sdk fixture streams every answer.
				if c.ID == "server-sse-streams-functional" {
					s.passed++
				}
			case "FAILURE":
				s.failed++
				s.failures = append(s.failures, c)
			case "WARNING":
				s.warnings++
			}
		}
		scores[m[1]] = s
	}
	return scores
}

// scoredScenarios lists the server scenarios a requirement set scores.
func scoredScenarios(t *testing.T, rev string) []string {
	t.Helper()
	node, cli := conformanceCLI(t)
	out, err := exec.Command(node, cli, "list", "--server", "--requirements", rev).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --requirements %s: %v\n%s", rev, err, out)
	}
	var names []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			in = true
		case in && strings.HasPrefix(line, "  - "):
			names = append(names, strings.TrimPrefix(line, "  - "))
		case in && strings.TrimSpace(line) == "":
			if len(names) > 0 {
				return names
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no server scenarios listed for %s:\n%s", rev, out)
	}
	return names
}

// unexpected is the failures of a scenario that no known failure covers.
func unexpected(scenario string, s score, known []knownFailure) []check {
	var out []check
	for _, c := range s.failures {
		if !slices.ContainsFunc(known, func(k knownFailure) bool { return k.matches(scenario, c) }) {
			out = append(out, c)
		}
	}
	return out
}

// judge fails the test on every failed check of scenario that known does
// not list, after one retry of the scenario alone at rev (the suite reads
// some streams within 800 ms, which two busy cores can miss); listed
// failures are logged with their reason.
func judge(t *testing.T, url, rev, scenario string, s score, known []knownFailure) score {
	t.Helper()
	if first := unexpected(scenario, s, known); len(first) > 0 {
		for _, c := range first {
			t.Logf("%s %s (%s): %s failed (%s); retrying the scenario alone", url, scenario, rev, c.ID, c.ErrorMessage)
		}
		if again, ok := conformance(t, url, "--scenario", scenario, "--spec-version", rev)[scenario]; ok {
			again.retried = true
			s = again
		}
	}
	for _, c := range s.failures {
		i := slices.IndexFunc(known, func(k knownFailure) bool { return k.matches(scenario, c) })
		if i < 0 {
			t.Errorf("%s %s (%s): %s FAILED: %s", url, scenario, rev, c.ID, c.ErrorMessage)
		} else {
			t.Logf("%s %s (%s): %s fails, known: %s", url, scenario, rev, c.ID, known[i].why)
		}
	}
	return s
}

// TestConformanceThroughProxy runs both frozen requirement sets against
// go-sdk's everything server directly and through a proxy agent (no
// allowed_origins: the DNS-rebinding scenario passes on the loopback rule).
// Every scored check through the proxy passes but the known bridging ones
// (36/37 at 2026-07-28; 30/30 at 2025-11-25).
func TestConformanceThroughProxy(t *testing.T) {
	direct := startConformanceServer(t)
	gw := startGateway(t, fmt.Sprintf(`
name: conformance
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    conf: {url: %q, timeout: 60s}
agents:
  conf: {kind: proxy, servers: [conf]}
`, direct))
	proxy := gw.Base + "/agents/conf/mcp"
	for _, rev := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(rev, func(t *testing.T) {
			scored := scoredScenarios(t, rev)
			want := conformance(t, direct, "--requirements", rev)
			got := conformance(t, proxy, "--requirements", rev)
			var table strings.Builder
			var passDirect, passProxy int
			for _, n := range scored {
				g, ok := got[n]
				if !ok {
					t.Errorf("scored scenario %s did not run through the proxy", n)
					continue
				}
				g = judge(t, proxy, rev, n, g, bridgingFailures)
				w := want[n]
				if w.failed == 0 {
					passDirect++
				}
				if g.failed == 0 {
					passProxy++
				}
				fmt.Fprintf(&table, "  %-46s direct: %-34s proxy: %s\n", n, w, g)
			}
			var unscored []string
			for n, g := range got {
				if !slices.Contains(scored, n) {
					unscored = append(unscored, fmt.Sprintf("%s (proxy: %v; direct: %v)", n, g, want[n]))
				}
			}
			sort.Strings(unscored)
			t.Logf("conformance %s, --requirements %s: %d scored scenarios\n%sSCORED: direct %d/%d, proxy %d/%d\nnot scored: %s",
				conformanceVersion, rev, len(scored), table.String(), passDirect, len(scored), passProxy, len(scored), strings.Join(unscored, "; "))
		})
	}
}

// TestConformanceAgentKinds runs the protocol-level scenarios against an
// agent of each kind but proxy: an llm agent of the quickstart kind
// (built-in passthrough model), a chain of it, and a toolbox over go-sdk's
// conformance server. Every check passes but the untestable ones
// (agentFailures): server-stateless 24/28 scored as the suite scores
// (28/28 of what an agent without the fixture's tools can be asked),
// caching 7/7.
func TestConformanceAgentKinds(t *testing.T) {
	down := startConformanceServer(t)
	gw := startGateway(t, fmt.Sprintf(`
name: conformance-kinds
listen: "127.0.0.1:{{PORT}}"
models:
  default: passthrough
mcp:
  servers:
    conf: {url: %q, timeout: 60s}
agents:
  echo:
    title: Echo Agent
    description: Answers with your own message (built-in passthrough model).
  seq: {kind: chain, sequence: [echo]}
  box: {kind: toolbox, servers: [conf]}
`, down))
	for _, kind := range []struct{ kind, agent string }{{"llm", "echo"}, {"chain", "seq"}, {"toolbox", "box"}} {
		t.Run(kind.kind, func(t *testing.T) {
			url := gw.Base + "/agents/" + kind.agent + "/mcp"
			var table strings.Builder
			passed := 0
			for _, sc := range agentProtocolScenarios {
				got, ok := conformance(t, url, "--scenario", sc.scenario, "--spec-version", sc.rev)[sc.scenario]
				if !ok {
					t.Errorf("scenario %s did not run at %s (not in conformance %s?)", sc.scenario, sc.rev, conformanceVersion)
					continue
				}
				got = judge(t, url, sc.rev, sc.scenario, got, agentFailures)
				if got.failed == 0 {
					passed++
				}
				fmt.Fprintf(&table, "  %-28s %-11s %s\n", sc.scenario, sc.rev, got)
			}
			t.Logf("conformance %s, protocol-level scenarios against a %s agent:\n%sPASSED: %d/%d", conformanceVersion, kind.kind, table.String(), passed, len(agentProtocolScenarios))
		})
	}
}

// The proxy kind in front of @modelcontextprotocol/server-everything, over
// Streamable HTTP and stdio: its tools listed and called with results equal
// to the server's own, its long-running operation's progress streamed.
func TestProxyKindEverything(t *testing.T) {
	httpURL := startEverything(t)
	node := nodeBin(t)
	script := npmFile(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	gw := startGateway(t, fmt.Sprintf(`
name: everything
listen: "127.0.0.1:{{PORT}}"
mcp:
  servers:
    web: {transport: http, url: %q, timeout: 60s}
    local: {transport: stdio, command: %q, args: [%q, "stdio"], timeout: 60s}
agents:
  web: {kind: proxy, servers: [web]}
  local: {kind: proxy, servers: [local]}
  both: {kind: proxy, servers: [web, local], tools: {deny: ["local__get-env"]}}
`, httpURL, node, script))
	directSession := everythingSession(t, httpURL, "")

	for _, c := range []struct{ agent, prefix string }{{"web", ""}, {"local", ""}, {"both", "web__"}, {"both", "local__"}} {
		t.Run(c.agent+"/"+strings.TrimSuffix(c.prefix, "__"), func(t *testing.T) {
			cs := everythingSession(t, gw.Base+"/agents/"+c.agent+"/mcp", "2025-11-25")
			tools := map[string]bool{}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range res.Tools {
				tools[tl.Name] = true
			}
			for _, name := range []string{"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} {
				if !tools[c.prefix+name] {
					t.Errorf("%s%s not listed: %v", c.prefix, name, tools)
				}
			}
			if c.agent == "both" && tools["local__get-env"] {
				t.Error("local__get-env is denied by the agent's rules but listed")
			}
			for _, call := range []struct {
				name string
				args map[string]any
			}{
				{"echo", map[string]any{"message": "through the proxy"}},
				{"get-sum", map[string]any{"a": 2, "b": 40}},
				{"get-tiny-image", map[string]any{}},
				{"get-structured-content", map[string]any{"location": "Chicago"}},
				{"get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}},
				{"get-resource-links", map[string]any{"count": 2}},
			} {
				want := everythingCall(t, directSession, call.name, call.args)
				got := everythingCall(t, cs, c.prefix+call.name, call.args)
				if got != want {
					t.Errorf("%s%s differs from the server's own result:\nproxy:  %s\ndirect: %s", c.prefix, call.name, got, want)
				}
			}
			checkLongRunning(t, gw.Base+"/agents/"+c.agent+"/mcp", c.prefix+"trigger-long-running-operation")
		})
	}

	t.Run("image bytes", func(t *testing.T) {
		cs := everythingSession(t, gw.Base+"/agents/web/mcp", "")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-tiny-image"})
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(npmFile(t, "@modelcontextprotocol/server-everything", "dist/tools/get-tiny-image.js"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`MCP_TINY_IMAGE = "([^"]+)"`).FindSubmatch(src)
		if m == nil {
			t.Fatal("MCP_TINY_IMAGE not found in server-everything")
		}
		want, _ := base64.StdEncoding.DecodeString(string(m[1]))
		var found bool
		for _, c := range res.Content {
			if img, ok := c.(*mcp.ImageContent); ok {
				found = true
				if img.MIMEType != "image/png" || !reflect.DeepEqual(img.Data, want) {
					t.Errorf("image changed on the way: %s, %d bytes (want %d)", img.MIMEType, len(img.Data), len(want))
				}
			}
		}
		if !found {
			t.Errorf("no image content: %+v", res.Content)
		}
	})
}

func everythingSession(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	return everythingSessionWith(t, url, version, nil)
}

func everythingSessionWith(t *testing.T, url, version string, onProgress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r.Params) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// everythingCall calls a tool and returns the part of the result a proxy
// must not change, as JSON: content, structuredContent, isError.
func everythingCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(map[string]any{"content": res.Content, "structuredContent": res.StructuredContent, "isError": res.IsError})
	return string(b)
}

// checkLongRunning runs the 2 s, 4 step operation through the proxy: four
// notifications with the server's values, spread over the call, all before
// the result.
func checkLongRunning(t *testing.T, url, tool string) {
	t.Helper()
	type arrival struct {
		p  *mcp.ProgressNotificationParams
		at time.Time
	}
	var mu sync.Mutex
	var got []arrival
	// The SDK runs progress handlers asynchronously: arrival times are
	// taken in the handler, the order from the values.
	token := fmt.Sprintf("lro-%d", time.Now().UnixNano())
	cs := everythingSessionWith(t, url, "", func(p *mcp.ProgressNotificationParams) {
		if p.ProgressToken == token {
			mu.Lock()
			got = append(got, arrival{p, time.Now()})
			mu.Unlock()
		}
	})
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"duration": 2, "steps": 4},
		Meta: mcp.Meta{"progressToken": token}})
	end := time.Now()
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("%d progress notifications, want 4", len(got))
	}
	sort.Slice(got, func(i, j int) bool { return got[i].p.Progress < got[j].p.Progress })
	for i, a := range got {
		if a.p.Progress != float64(i+1) || a.p.Total != 4 {
			t.Errorf("notification %d: progress %v total %v, want %d of 4", i, a.p.Progress, a.p.Total, i+1)
		}
	}
	// Unbuffered: the first step (after 0.5 s) reached the caller well
	// before the call ended (after 2 s).
	if lead := end.Sub(got[0].at); lead < 700*time.Millisecond {
		t.Errorf("the first notification arrived %v before the result (call took %v): buffered", lead, end.Sub(start))
	}
}
