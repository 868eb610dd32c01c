package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const reloadBase = `
name: rl
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 20ms, poll_interval: 0}
agents:
  echo: {description: "%s"}
%s`

func reloadCfg(desc, extra string) string { return fmt.Sprintf(reloadBase, desc, extra) }

// load runs send_message calls in the background until stop; it counts
// every failure.
type load struct {
	calls, failures atomic.Int64
	mu              sync.Mutex
	errs            []string
	stop            chan struct{}
	wg              sync.WaitGroup
}

func startLoad(t *testing.T, url string, workers int, tool string, args map[string]any) *load {
	l := &load{stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		version := []string{"", "2025-11-25"}[i%2]
		cs := connect(t, url, version, nil)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < 100000; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := call(ctx, cs, tool, args)
				cancel()
				l.calls.Add(1)
				if err != nil {
					l.failures.Add(1)
					l.mu.Lock()
					if len(l.errs) < 5 {
						l.errs = append(l.errs, err.Error())
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

func (l *load) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if l.calls.Load() == 0 {
		t.Fatal("load made no calls")
	}
	if f := l.failures.Load(); f > 0 {
		t.Fatalf("%d of %d calls failed during reloads, e.g. %v", f, l.calls.Load(), l.errs)
	}
	t.Logf("%d calls, 0 failures", l.calls.Load())
}

func TestReloadValidInvalidValid(t *testing.T) {
	g := startGateway(t, reloadCfg("v1", ""))
	l := startLoad(t, g.Base+"/agents/echo/mcp", 4, "send_message", map[string]any{"message": "ping"})
	ok := func(want float64) func() bool {
		return func() bool {
			v, found := g.metric(t, "pallasgw_config_last_reload_successful")
			return found && v == want
		}
	}
	eventually(t, 5*time.Second, "initial success gauge", ok(1))

	g.writeConfig(t, reloadCfg("v2", "  broken: {kind: llm, modle: x}\n"))
	eventually(t, 10*time.Second, "failed reload", ok(0))
	st := g.status(t)
	lr := st["last_reload"].(map[string]any)
	if lr["ok"] != false || !strings.Contains(lr["error"].(string), "pallasgw.yaml:7: agents.broken.modle: unknown key") {
		t.Fatalf("status last_reload = %v", lr)
	}
	code, ans := g.reload(t)
	if code != 422 || !strings.Contains(fmt.Sprint(ans["error"]), "agents.broken.modle: unknown key") {
		t.Fatalf("POST /-/reload = %d %v", code, ans)
	}
	_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
	if !strings.Contains(reg, `"description": "v1"`) {
		t.Fatalf("old config not serving after a bad edit:\n%s", reg)
	}

	g.writeConfig(t, reloadCfg("v3", "  added: {}\n"))
	eventually(t, 10*time.Second, "recovered reload", ok(1))
	_, _, reg = httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
	if !strings.Contains(reg, `"description": "v3"`) || !strings.Contains(reg, "/agents/added/mcp") {
		t.Fatalf("new config not serving:\n%s", reg)
	}
	if !g.logged(`"changes":["agent added added","agent echo changed"]`) {
		t.Errorf("reload log line lacks the changes")
	}
	l.finish(t)
}

func TestReloadAgentsAndLegacyPorts(t *testing.T) {
	g := startGateway(t, reloadCfg("v1", ""))
	ports := freePorts(t, 3)
	p1, p2, busy := ports[0], ports[1], ports[2]
	apply := func(extra string) {
		t.Helper()
		g.writeConfig(t, reloadCfg("v", extra))
		if code, ans := g.reload(t); code != 200 {
			t.Fatalf("reload: %d %v", code, ans)
		}
	}
	answers := func(url string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err != nil {
			return err
		}
		defer cs.Close()
		got, err := call(ctx, cs, "send_message", map[string]any{"message": "hi"})
		if err == nil && got != "hi" {
			err = fmt.Errorf("answer %q", got)
		}
		return err
	}

	apply(fmt.Sprintf("  extra: {port: %d}\n", p1))
	if err := answers(g.Base + "/agents/extra/mcp"); err != nil {
		t.Fatalf("added agent: %v", err)
	}
	if err := answers(fmt.Sprintf("http://127.0.0.1:%d/mcp", p1)); err != nil {
		t.Fatalf("added legacy port: %v", err)
	}

	apply(fmt.Sprintf("  extra: {port: %d}\n", p2))
	if err := answers(fmt.Sprintf("http://127.0.0.1:%d/mcp", p2)); err != nil {
		t.Fatalf("moved legacy port: %v", err)
	}
	eventually(t, 10*time.Second, "old port closed", func() bool { return refused(p1) })

	// A port that cannot be bound fails the whole reload; the old one serves on.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", busy))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g.writeConfig(t, reloadCfg("v", fmt.Sprintf("  extra: {port: %d}\n  other: {}\n", busy)))
	code, ans := g.reload(t)
	if code != 422 || !strings.Contains(fmt.Sprint(ans["error"]), fmt.Sprintf("binding legacy port %d", busy)) {
		t.Fatalf("reload with a busy port = %d %v", code, ans)
	}
	if err := answers(fmt.Sprintf("http://127.0.0.1:%d/mcp", p2)); err != nil {
		t.Fatalf("old port after failed reload: %v", err)
	}
	if code, _, _ := httpGet(t, g.Base+"/agents/other/mcp", nil); code != 404 {
		t.Fatalf("agent of the failed reload is served (%d)", code)
	}

	apply("")
	eventually(t, 10*time.Second, "removed port closed", func() bool { return refused(p2) })
	resp, err := post(g.Base+"/agents/extra/mcp", listTools, nil)
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("removed agent still routed: %v %v", err, resp.StatusCode)
	}
	resp.Body.Close()
}

func TestReloadEditorRenameAndConfigMapSwap(t *testing.T) {
	t.Run("rename over", func(t *testing.T) {
		g := startGateway(t, reloadCfg("v1", ""))
		g.renameConfig(t, reloadCfg("renamed", ""))
		eventually(t, 10*time.Second, "reload after rename", func() bool {
			_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
			return strings.Contains(reg, `"description": "renamed"`)
		})
		g.renameConfig(t, reloadCfg("renamed twice", "")) // the watch survived the rename
		eventually(t, 10*time.Second, "second reload after rename", func() bool {
			_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
			return strings.Contains(reg, `"description": "renamed twice"`)
		})
	})
	t.Run("configmap ..data swap", func(t *testing.T) {
		dir := t.TempDir()
		port := freePorts(t, 1)[0]
		write := func(version, desc string) {
			vdir := filepath.Join(dir, "..2026_11_22_"+version)
			os.Mkdir(vdir, 0o755)
			cfg := strings.ReplaceAll(reloadCfg(desc, ""), "{{PORT}}", fmt.Sprint(port))
			os.WriteFile(filepath.Join(vdir, "pallasgw.yaml"), []byte(cfg), 0o644)
			tmp := filepath.Join(dir, "..data_tmp")
			os.Symlink(filepath.Base(vdir), tmp)
			if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
				t.Fatal(err)
			}
		}
		write("a", "configmap a")
		os.Symlink("..data/pallasgw.yaml", filepath.Join(dir, "pallasgw.yaml"))
		g := startGatewayAt(t, filepath.Join(dir, "pallasgw.yaml"), port)
		write("b", "configmap b")
		os.RemoveAll(filepath.Join(dir, "..2026_11_22_a"))
		eventually(t, 10*time.Second, "reload after ..data swap", func() bool {
			_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
			return strings.Contains(reg, `"description": "configmap b"`)
		})
		write("c", "configmap c")
		os.RemoveAll(filepath.Join(dir, "..2026_11_22_b"))
		eventually(t, 10*time.Second, "second ..data swap", func() bool {
			_, _, reg := httpGet(t, g.Base+"/.well-known/mcp/server.json", nil)
			return strings.Contains(reg, `"description": "configmap c"`)
		})
	})
}
