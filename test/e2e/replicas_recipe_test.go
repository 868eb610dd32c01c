//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// TestReplicasRecipe runs `make replicas`'s script (configs/replicas/
// replicas.sh) as docs/deployment.md, "On one machine", tells a reader to:
// a session initialized on one replica is used on all three, a replica
// that stops loses no request (nginx retries it on another), and the stop
// leaves no process and no pid file behind.
func TestReplicasRecipe(t *testing.T) {
	nginx, redis := tool(t, "nginx"), tool(t, "redis-server")
	run := t.TempDir()
	ports := freePorts(t, 5)
	front := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cmd := exec.Command("bash", filepath.Join(repoDir, "configs/replicas/replicas.sh"))
	cmd.Env = append(os.Environ(),
		"RUN_DIR="+run, "NGINX="+nginx, "REDIS_SERVER="+redis, "PALLASGW_BIN="+gwtest.Binary(),
		fmt.Sprintf("PALLASGW_REPLICAS_PORT=%d", ports[0]),
		fmt.Sprintf("PALLASGW_REPLICA_PORTS=%d %d %d", ports[1], ports[2], ports[3]),
		fmt.Sprintf("PALLASGW_REDIS_PORT=%d", ports[4]))
	script := startProc(t, "replicas.sh", cmd)
	waitFor(t, "the replicas to be ready", 60*time.Second, script, func() error {
		if !strings.Contains(script.out.String(), "stop:") {
			return fmt.Errorf("not ready yet")
		}
		return nil
	})
	accessLog := func() string { return string(must(os.ReadFile(filepath.Join(run, "access.log")))) }

	// A session initialized on one replica is used on the three.
	url := front + "/agents/echo/mcp"
	sid, _, err := recipeCall(url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"recipe","version":"1"}}}`)
	if err != nil || sid == "" {
		t.Fatalf("initialize: session %q, %v", sid, err)
	}
	// nginx writes a request's access line after its response, so a
	// count is taken once the line is there, not when the client has
	// its answer.
	posts := func() []string { return postRe.FindAllString(accessLog(), -1) }
	waitFor(t, "initialize in the access log", 10*time.Second, script, func() error {
		if len(posts()) < 1 {
			return fmt.Errorf("no POST logged yet")
		}
		return nil
	})
	before := len(posts())
	for i := 1; i <= 3; i++ {
		_, res, err := recipeCall(url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"call %d"}}}`, i+1, i))
		if err != nil || !strings.Contains(string(res), fmt.Sprintf(`"call %d"`, i)) {
			t.Fatalf("call %d with the session: %s, %v", i, res, err)
		}
	}
	waitFor(t, "the three calls in the access log", 10*time.Second, script, func() error {
		if n := len(posts()) - before; n < 3 {
			return fmt.Errorf("%d of 3 calls logged", n)
		}
		return nil
	})
	served := map[string]bool{}
	for _, line := range posts()[before:] {
		if m := upstreamRe.FindStringSubmatch(line); m != nil {
			served[m[1]] = true
		}
	}
	if len(served) != 3 {
		t.Errorf("the session's three calls were served by %v, want three replicas:\n%s", served, accessLog())
	}

	// A replica that stops: after it exits, every request still succeeds.
	pid := must(strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(run, "replica-2.pid")))))))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica 2 to exit", 30*time.Second, script, func() error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("pid %d still runs", pid)
		}
		return nil
	})
	logged := len(posts())
	for i := 1; i <= 6; i++ {
		if _, res, err := recipeCall(url, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"after %d"}}}`, i, i)); err != nil || !strings.Contains(string(res), fmt.Sprintf(`"after %d"`, i)) {
			t.Errorf("call %d after replica 2 stopped: %s, %v", i, res, err)
		}
	}
	waitFor(t, "the six calls in the access log", 10*time.Second, script, func() error {
		if n := len(posts()) - logged; n < 6 {
			return fmt.Errorf("%d of 6 calls logged", n)
		}
		return nil
	})
	if retried := strings.Count(accessLog(), fmt.Sprintf("upstream=127.0.0.1:%d, ", ports[2])); retried == 0 {
		t.Errorf("no request was retried away from the stopped replica:\n%s", accessLog())
	}

	// make replicas-stop: the script stops everything and exits 0.
	pids := map[string]int{}
	for _, name := range []string{"replica-1", "replica-3", "nginx", "redis"} {
		pids[name] = must(strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(run, name+".pid")))))))
	}
	stop := exec.Command("bash", filepath.Join(repoDir, "configs/replicas/replicas.sh"), "stop")
	stop.Env = cmd.Env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("replicas.sh stop: %v\n%s", err, out)
	}
	<-script.exited
	if code := script.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("replicas.sh exited %d:\n%s", code, script.out.String())
	}
	for name, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("%s (pid %d) still runs after the stop", name, pid)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(run, "*.pid")); len(left) > 0 {
		t.Errorf("pid files left: %v", left)
	}
	if !strings.Contains(script.out.String(), "replicas: stopped") {
		t.Errorf("the script did not say it stopped:\n%s", script.out.String())
	}
}

var upstreamRe = regexp.MustCompile(`upstream=(127\.0\.0\.1:\d+) upstream_status=200`)

// postRe is an access log line of a POST to the echo agent.
var postRe = regexp.MustCompile(`(?m)^.* POST /agents/echo/mcp .*$`)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// recipeCall posts one JSON-RPC message to url and returns the response's
// Mcp-Session-Id and the JSON-RPC result (the first SSE event's data, or
// the JSON body).
func recipeCall(url, sid, body string) (string, json.RawMessage, error) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	text := string(raw)
	if i := strings.LastIndex(text, "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
		text = strings.TrimSpace(text[i+len("data: "):])
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		return "", nil, fmt.Errorf("%v: %s", err, raw)
	}
	if msg.Error != nil {
		return "", nil, fmt.Errorf("JSON-RPC error %s", msg.Error)
	}
	return resp.Header.Get("Mcp-Session-Id"), msg.Result, nil
}
