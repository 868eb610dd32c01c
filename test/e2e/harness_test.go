//go:build e2e

// Package e2e runs the real pallasgw binary behind and beside the real
// programs operators use with it: nginx, Caddy, Prometheus, docker-compose,
// the official TypeScript MCP SDK and @modelcontextprotocol/server-everything,
// Ory Hydra. The programs are installed by .ci/install-e2e-tools (Debian
// packages, npm packages into .tools/, Go programs into .tools/bin). A test whose program is missing skips with a
// message naming it, unless PALLASGW_E2E_REQUIRE=1 (CI), where it fails.
//
// Run with `make e2e`. Everything listens on 127.0.0.1 and free ports.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

var repoDir string // the repository root

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	repoDir = filepath.Clean(filepath.Join(wd, "..", ".."))
	gwtest.Main(m, true)
}

// need skips the test when a required program is missing, or fails it when
// PALLASGW_E2E_REQUIRE=1 (CI installs everything, so missing is a bug).
func need(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("%s is not available (%v); install it with .ci/install-e2e-tools", what, err)
	if os.Getenv("PALLASGW_E2E_REQUIRE") == "1" {
		t.Fatal(msg + " [PALLASGW_E2E_REQUIRE=1]")
	}
	t.Skip(msg)
}

// toolsDir is where .ci/install-e2e-tools put the npm packages.
func toolsDir() string {
	if d := os.Getenv("PALLASGW_E2E_TOOLS"); d != "" {
		return d
	}
	return filepath.Join(repoDir, ".tools")
}

// findTool looks for an executable in $PALLASGW_E2E_TOOLS/node_modules/.bin,
// then in PATH (and in the sbin directories Debian puts nginx in).
func findTool(name string) (string, error) {
	local := filepath.Join(toolsDir(), "node_modules", ".bin", name)
	if st, err := os.Stat(local); err == nil && !st.IsDir() {
		return local, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s nor in PATH", name, filepath.Dir(local))
}

// tool returns the path of a program, or skips (fails under REQUIRE).
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := findTool(name)
	need(t, name, err)
	return p
}

// nodeBin is the Node 22 of .tools (the npm `node` package) when present,
// else the system node. Scripts and npm tools are run with it explicitly,
// because their `#!/usr/bin/env node` would pick whatever node is in PATH.
func nodeBin(t testing.TB) string {
	t.Helper()
	return tool(t, "node")
}

// npmFile returns a file inside an installed npm package, or skips.
func npmFile(t testing.TB, pkg, rel string) string {
	t.Helper()
	p := filepath.Join(toolsDir(), "node_modules", filepath.FromSlash(pkg), filepath.FromSlash(rel))
	_, err := os.Stat(p)
	need(t, "npm package "+pkg, err)
	return p
}

var freePorts = gwtest.FreePorts

type syncBuffer = gwtest.SyncBuffer

// proc is one background process owned by a test: it is stopped (SIGTERM,
// then SIGKILL) when the test ends, and its output is shown on failure.
type proc struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// startProc runs cmd in the background until the test ends.
func startProc(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{t: t, name: name, cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	// Own process group, so that stopping it also stops its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, tail(p.out.String(), 8000))
		}
	})
	return p
}

func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	pgid := -p.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(pgid, syscall.SIGKILL)
		<-p.exited
		p.t.Errorf("%s did not stop on SIGTERM", p.name)
	}
}

// running fails the test when the process has exited.
func (p *proc) running() {
	p.t.Helper()
	select {
	case <-p.exited:
		p.t.Fatalf("%s exited early:\n%s", p.name, tail(p.out.String(), 8000))
	default:
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// waitFor polls cond every 50ms until it returns nil or timeout passes; p
// (may be nil) must keep running meanwhile.
func waitFor(t testing.TB, what string, timeout time.Duration, p *proc, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if p != nil {
			p.running()
		}
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// httpGetOK is a waitFor condition: GET url answers 200.
func httpGetOK(url string) func() error {
	return func() error {
		code, _, body, err := get(url, nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", url, code, strings.TrimSpace(body))
		}
		return nil
	}
}

// get fetches url with optional headers ("Host" sets the request's host).
func get(url string, hdr map[string]string) (int, http.Header, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, "", err
	}
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), err
}

// mustGet is get that fails the test on a transport error.
func mustGet(t testing.TB, url string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	code, h, body, err := get(url, hdr)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return code, h, body
}

// gateway is one running pallasgw (the race-enabled binary of TestMain),
// in a process group of its own like every proc, its output shown on
// failure.
type gateway struct {
	*gwtest.Gateway
}

// startGateway writes cfg, with {{PORT}} replaced by a free port, and runs
// `pallasgw serve` on it until the test ends. It returns once /readyz is 200.
func startGateway(t testing.TB, cfg string, env ...string) *gateway {
	t.Helper()
	return &gateway{gwtest.Start(t, gwtest.Options{Config: cfg, Env: env, ProcessGroup: true,
		StopTimeout: 15 * time.Second, TailBytes: 8000, LogOnFailure: true})}
}

// startEverything runs @modelcontextprotocol/server-everything over
// Streamable HTTP on a free port (it listens on every interface; the tests
// only talk to it on 127.0.0.1) and returns its MCP URL.
func startEverything(t testing.TB) string {
	t.Helper()
	node := nodeBin(t)
	script := npmFile(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	port := freePorts(t, 1)[0]
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	p := startProc(t, "server-everything", cmd)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	waitFor(t, "server-everything to listen", 30*time.Second, p, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return url
}

// runNodeScript runs one of the scripts in test/e2e/ts with Node 22 and
// returns its stdout lines. The scripts find the npm packages through
// PALLASGW_E2E_TOOLS.
func runNodeScript(t testing.TB, timeout time.Duration, script string, args ...string) []string {
	t.Helper()
	node := nodeBin(t)
	npmFile(t, "@modelcontextprotocol/sdk", "package.json")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(filepath.Dir(self), "ts", script)}, args...)...)
	cmd.Env = append(os.Environ(), "PALLASGW_E2E_TOOLS="+toolsDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Fatalf("node %s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// writeFile writes content under dir and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readRepoFile reads a file of the repository (the shipped deployment
// material the tests put to work).
func readRepoFile(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoDir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
