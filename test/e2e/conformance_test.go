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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proxy kind must behave like the server it fronts (SPEC §6): the
// official conformance suite (@modelcontextprotocol/conformance, Node 22)
// is run against the Go SDK's conformance server directly and through a
// proxy agent, and the proxy may not score lower on any scenario.

// score is one scenario's result: checks by status.
type score struct{ passed, failed, warnings int }

func (s score) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d warnings", s.passed, s.failed, s.warnings)
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

// runConformance runs the suite's active server scenarios against url and
// reads each scenario's checks.json.
func runConformance(t *testing.T, url string) map[string]score {
	t.Helper()
	node := nodeBin(t)
	cli := npmFile(t, "@modelcontextprotocol/conformance", "dist/index.js")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "server", "--url", url, "-o", out)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance run against %s timed out:\n%s", url, tail(string(log), 4000))
	}
	// A non-zero exit only means some check failed; the checks say which.
	_ = err
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) == 0 {
		t.Fatalf("conformance wrote no results (%v):\n%s", err, tail(string(log), 4000))
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
		var checks []struct {
			ID, Status, ErrorMessage string
		}
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
				t.Logf("%s: %s FAILURE: %s", url, c.ID, c.ErrorMessage)
			case "WARNING":
				s.warnings++
			}
		}
		scores[m[1]] = s
	}
	return scores
}

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
	want := runConformance(t, direct)
	got := runConformance(t, gw.Base+"/agents/conf/mcp")

	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var table strings.Builder
	var tw, tg score
	for _, n := range names {
		w, g := want[n], got[n]
		tw.passed, tw.failed, tw.warnings = tw.passed+w.passed, tw.failed+w.failed, tw.warnings+w.warnings
		tg.passed, tg.failed, tg.warnings = tg.passed+g.passed, tg.failed+g.failed, tg.warnings+g.warnings
		fmt.Fprintf(&table, "%-32s direct: %-36s proxy: %s\n", n, w, g)
		if g.passed < w.passed || g.failed > w.failed || g.warnings > w.warnings {
			t.Errorf("%s scores lower through the proxy: direct %v, proxy %v", n, w, g)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("scenario %s ran only through the proxy", n)
		}
	}
	t.Logf("conformance scores (%d scenarios):\n%sTOTAL direct: %v; proxy: %v", len(names), table.String(), tw, tg)
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
