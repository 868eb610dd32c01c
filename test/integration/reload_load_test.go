package integration

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

const loadCfg = `
name: rl
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 20ms, poll_interval: 0}
models:
  providers:
    openai: {base_url: "%s", api_key: test-key}
agents:
  echo: {description: "gen %d"}
  slow: {model: openai.fake-model, description: "gen %d"}
  %s
`

// TestReloadUnderLoad: 50 reloads while send_message (fast and slow,
// streaming progress) and get_health run; no request may fail, and calls
// that were streaming when a reload happened finish on their snapshot.
func TestReloadUnderLoad(t *testing.T) {
	llm := fakellm.New(t)
	llm.SetEchoDelay(150 * time.Millisecond)
	cfg := func(gen int) string {
		extra := ""
		if gen%2 == 1 {
			extra = fmt.Sprintf("gen%d: {}", gen) // agents come and go too
		}
		return fmt.Sprintf(loadCfg, llm.OpenAIBaseURL(), gen, gen, extra)
	}
	g := startGateway(t, cfg(0))
	fast := startLoad(t, g.Base+"/agents/echo/mcp", 2, "send_message", map[string]any{"message": "ping"})
	health := startLoad(t, g.Base+"/agents/echo/mcp", 1, "get_health", map[string]any{})
	slow := startLoad(t, g.Base+"/agents/slow/mcp", 4, "send_message", map[string]any{"message": "slow"})
	streamed := startStreamLoad(t, g.Base+"/agents/slow/mcp", 2)
	for gen := 1; gen <= 50; gen++ {
		g.writeConfig(t, cfg(gen))
		if code, ans := g.reload(t); code != 200 {
			t.Fatalf("reload %d: %d %v", gen, code, ans)
		}
	}
	fast.finish(t)
	health.finish(t)
	slow.finish(t)
	streamed.finish(t)
	if v, _ := g.metric(t, `pallasgw_config_reloads_total{result="success"}`); v < 51 {
		t.Errorf("reload successes = %v, want >= 51", v)
	}
}

// startStreamLoad posts raw streaming tools/calls with a progress token and
// checks every SSE stream is complete and ordered.
func startStreamLoad(t *testing.T, url string, workers int) *load {
	l := &load{stop: make(chan struct{})}
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"s"},"_meta":{"progressToken":"p"}}}`
	for i := 0; i < workers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; n < 10000; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.calls.Add(1)
				err := func() error {
					resp, err := post(url, body, nil)
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"echo: s"`) || !strings.Contains(string(b), `"total"`) {
						return fmt.Errorf("status %d body %q", resp.StatusCode, b)
					}
					return nil
				}()
				if err != nil {
					l.failures.Add(1)
					l.mu.Lock()
					l.errs = append(l.errs, err.Error())
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// TestReloadPolicyNeverHalfApplies swaps auth rules and agent behaviour in
// one edit: a request must see both from the same config, never v2's agent
// with v1's permission.
func TestReloadPolicyNeverHalfApplies(t *testing.T) {
	const policyCfg = `
name: pol
listen: "127.0.0.1:{{PORT}}"
reload: {debounce: 20ms, poll_interval: 0}
auth:
  mode: tokens
  tokens:
    - {name: alpha, token: alpha-token-0123456789, agents: [%s]}
agents:
  x: {model: playback, params: {playback: ["%s"]}}
  y: {}
`
	v1 := fmt.Sprintf(policyCfg, "x", "v1")
	v2 := fmt.Sprintf(policyCfg, "y", "v2")
	g := startGateway(t, v1)
	var ok1, denied, bad atomic.Int64
	var badMsg atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"m"}}}`
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 100000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := post(g.Base+"/agents/x/mcp", req, map[string]string{"Authorization": "Bearer alpha-token-0123456789"})
				if err != nil {
					bad.Add(1)
					badMsg.Store(err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200 && strings.Contains(string(b), `"text":"v1"`):
					ok1.Add(1)
				case resp.StatusCode == 403:
					denied.Add(1)
				default:
					bad.Add(1)
					badMsg.Store(fmt.Sprintf("%d %s", resp.StatusCode, b))
				}
			}
		}()
	}
	for i := 0; i < 30; i++ {
		g.writeConfig(t, []string{v2, v1}[i%2])
		if code, ans := g.reload(t); code != 200 {
			t.Fatalf("reload: %d %v", code, ans)
		}
	}
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d requests saw a half-applied config or failed, e.g. %v", bad.Load(), badMsg.Load())
	}
	if ok1.Load() == 0 || denied.Load() == 0 {
		t.Fatalf("both configs should have served: allowed %d, denied %d", ok1.Load(), denied.Load())
	}
}

// TestReloadNoLeaks: 200 reloads (with legacy ports opening and closing)
// leave no goroutines or file descriptors behind.
func TestReloadNoLeaks(t *testing.T) {
	port := freePorts(t, 1)[0]
	cfgs := []string{reloadCfg("a", ""), reloadCfg("b", fmt.Sprintf("  extra: {port: %d}\n", port))}
	g := startGateway(t, cfgs[0])
	for i := 0; i < 4; i++ { // warm up both configs
		g.writeConfig(t, cfgs[i%2])
		g.reload(t)
	}
	g.writeConfig(t, cfgs[0])
	g.reload(t)
	gor0, _ := g.metric(t, "go_goroutines")
	fds0, _ := g.metric(t, "process_open_fds")
	for i := 1; i <= 200; i++ {
		g.writeConfig(t, cfgs[i%2])
		if code, ans := g.reload(t); code != 200 {
			t.Fatalf("reload %d: %d %v", i, code, ans)
		}
	}
	var gor, fds float64
	eventually(t, 20*time.Second, "goroutines and fds back to baseline", func() bool {
		gor, _ = g.metric(t, "go_goroutines")
		fds, _ = g.metric(t, "process_open_fds")
		return gor <= gor0+3 && fds <= fds0+3
	})
	t.Logf("goroutines %v -> %v, fds %v -> %v after 200 reloads", gor0, gor, fds0, fds)
}
