//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// startRedis runs redis-server (Debian's package) on a free loopback port,
// without persistence, and returns its redis:// URL.
func startRedis(t testing.TB) (string, *proc) {
	t.Helper()
	port := freePorts(t, 1)[0]
	p := startProc(t, "redis-server", exec.Command(tool(t, "redis-server"), "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no"))
	waitFor(t, "redis-server to listen", 15*time.Second, p, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), p
}

// TestQuotasSharedByReplicas: two gateway replicas on one Redis share each
// caller's request rate and token budget: the caller is cut off at the
// same total whichever replica it hits. With Redis stopped, quotas fail
// open as configured and calls go on.
func TestQuotasSharedByReplicas(t *testing.T) {
	redisURL, redis := startRedis(t)
	llm := fakellm.New(t)
	cfg := fmt.Sprintf(`
name: quotas
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
quotas: {store: %q, on_store_error: open}
auth:
  mode: tokens
  tokens:
    - {name: chatty, token: chatty-token-0123456789}
    - {name: thrifty, token: thrifty-token-0123456789}
policy:
  callers:
    chatty: {limits: {requests_per_minute: 6}}
    thrifty: {limits: {tokens_per_day: 40}}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: sk-test}
agents:
  bot: {}
`, redisURL, llm.OpenAIBaseURL())
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	replicas := []*gateway{a, b}

	call := func(g *gateway, token, body string) (int, string) {
		req, _ := http.NewRequest("POST", g.Base+"/agents/bot/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, out.String()
	}
	const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	t.Run("request rate", func(t *testing.T) {
		var codes []int
		for i := range 8 {
			code, _ := call(replicas[i%2], "chatty-token-0123456789", list)
			codes = append(codes, code)
		}
		if fmt.Sprint(codes) != "[200 200 200 200 200 200 429 429]" {
			t.Errorf("statuses %v alternating replicas, want 6 allowed in all, then 429 on both", codes)
		}
	})

	t.Run("token budget", func(t *testing.T) {
		llm.Script(fakellm.Text("one").Usage(15, 10), fakellm.Text("two").Usage(15, 10))
		send := func(id int) string {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
				"params": map[string]any{"name": "send_message", "arguments": map[string]any{"message": "hi"}}})
			return string(b)
		}
		if code, body := call(a, "thrifty-token-0123456789", send(1)); code != 200 || !strings.Contains(body, `"one"`) {
			t.Fatalf("first call on replica A: %d %s", code, body)
		}
		if code, body := call(b, "thrifty-token-0123456789", send(2)); code != 200 || !strings.Contains(body, `"two"`) {
			t.Fatalf("second call on replica B: %d %s", code, body)
		}
		// 50 tokens of 40 spent across both replicas: either refuses now.
		for i, g := range replicas {
			_, body := call(g, "thrifty-token-0123456789", send(3+i))
			if !strings.Contains(body, "budget of 40 LLM tokens") || !strings.Contains(body, "retry after") {
				t.Errorf("replica %d over the shared budget: %s", i, body)
			}
		}
	})

	t.Run("store down fails open", func(t *testing.T) {
		redis.stop()
		start := time.Now()
		if code, body := call(a, "chatty-token-0123456789", list); code != 200 {
			t.Errorf("with the store down and on_store_error open: %d %s", code, body)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("a down store held the call %v", d)
		}
		if n, _ := a.Metric(`pallasgw_quota_store_errors_total{op="rate"}`); n < 1 {
			t.Error("the store failure was not counted")
		}
	})
}
