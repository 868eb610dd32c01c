package integration

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

const shutdownCfg = `
name: sd
listen: "127.0.0.1:{{PORT}}"
shutdown_timeout: %s
drain_delay: %s
models:
  providers:
    openai: {base_url: "%s", api_key: k}
agents:
  slow: {model: openai.fake-model}
`

// TestGracefulShutdownUnderLoad: SIGTERM while calls stream. Running calls
// finish, new ones are refused, /readyz is 503, the process exits 0.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	llm := fakellm.New(t)
	llm.SetEchoDelay(1500 * time.Millisecond)
	g := startGateway(t, fmt.Sprintf(shutdownCfg, "20s", "0s", llm.OpenAIBaseURL()))
	const running = 4
	var wg sync.WaitGroup
	results := make([]string, running)
	for i := 0; i < running; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post(g.Base+"/agents/slow/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"m%d"},"_meta":{"progressToken":1}}}`, i, i), nil)
			if err != nil {
				results[i] = err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] = fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	eventually(t, 10*time.Second, "calls reaching the model", func() bool { return len(llm.ChatRequests()) >= running })
	g.Signal(syscall.SIGTERM)
	eventually(t, 5*time.Second, "/readyz 503", func() bool {
		code, _, _ := httpGet(t, g.Base+"/readyz", nil)
		return code == 503
	})
	resp, err := post(g.Base+"/agents/slow/mcp", listTools, nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Errorf("new call during drain: %d, want 503", resp.StatusCode)
		}
	}
	wg.Wait()
	for i, r := range results {
		if !strings.HasPrefix(r, "200 ") || !strings.Contains(r, fmt.Sprintf(`"text":"echo: m%d"`, i)) {
			t.Errorf("running call %d did not finish: %s", i, r)
		}
	}
	select {
	case <-g.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not exit after draining")
	}
	if code := g.ExitCode(); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, g.Logs())
	}
}

// TestShutdownTimeoutCancelsCalls: a call longer than shutdown_timeout is
// canceled (the model stream is closed) and the process still exits 0.
func TestShutdownTimeoutCancelsCalls(t *testing.T) {
	llm := fakellm.New(t)
	hang := fakellm.Hang()
	llm.Script(hang)
	g := startGateway(t, fmt.Sprintf(shutdownCfg, "1s", "0s", llm.OpenAIBaseURL()))
	done := make(chan string, 1)
	go func() {
		resp, err := post(g.Base+"/agents/slow/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"forever"}}}`, nil)
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	<-hang.Started()
	g.Signal(syscall.SIGTERM)
	select {
	case <-hang.Disconnected():
	case <-time.After(15 * time.Second):
		t.Fatal("model stream not closed after shutdown_timeout")
	}
	<-done
	select {
	case <-g.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not exit")
	}
	if code := g.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestDrainDelayKeepsServing: on SIGTERM /readyz turns 503 at once, but new
// calls are served for drain_delay (a proxy that cannot retry a refused
// POST has moved away by then); a second SIGTERM stops it at once: new
// calls are refused with 503 or find the listener closed, and the process
// exits 0.
func TestDrainDelayKeepsServing(t *testing.T) {
	llm := fakellm.New(t)
	g := startGateway(t, fmt.Sprintf(shutdownCfg, "20s", "10m", llm.OpenAIBaseURL()))
	g.Signal(syscall.SIGTERM)
	eventually(t, 5*time.Second, "/readyz 503", func() bool {
		code, _, _ := httpGet(t, g.Base+"/readyz", nil)
		return code == 503
	})
	status := func() int {
		resp, err := post(g.Base+"/agents/slow/mcp", listTools, nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status(); code != 200 {
		t.Errorf("a new call within drain_delay: %d, want 200", code)
	}
	g.Signal(syscall.SIGTERM)
	eventually(t, 10*time.Second, "new calls refused with 503 after the delay", func() bool {
		code := status()
		return code == 503 || code == 0 // 0: the listener has closed already
	})
	select {
	case <-g.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not exit")
	}
	if code := g.ExitCode(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestSecondSignalStopsAtOnce: a second SIGTERM stops the gateway at once,
// whether the first one's shutdown is in its drain delay or waiting for a
// running call (both 10 minutes here): the running call is canceled (its
// model stream closed) and the process exits 0.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for _, tc := range []struct{ name, drainDelay string }{{"during the drain delay", "10m"}, {"while calls run", "0s"}} {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.New(t)
			hang := fakellm.Hang()
			llm.Script(hang)
			g := startGateway(t, fmt.Sprintf(shutdownCfg, "10m", tc.drainDelay, llm.OpenAIBaseURL()))
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := post(g.Base+"/agents/slow/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"forever"}}}`, nil)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			<-hang.Started()
			g.Signal(syscall.SIGTERM)
			eventually(t, 5*time.Second, "/readyz 503", func() bool {
				code, _, _ := httpGet(t, g.Base+"/readyz", nil)
				return code == 503
			})
			if tc.drainDelay == "0s" {
				eventually(t, 5*time.Second, "the drain", func() bool { return g.logged(`"msg":"draining"`) })
			}
			g.Signal(syscall.SIGTERM)
			select {
			case <-g.Exited():
			case <-time.After(60 * time.Second): // the shutdown would take 10 minutes
				t.Fatalf("gateway did not stop on the second SIGTERM:\n%s", g.Logs())
			}
			if code := g.ExitCode(); code != 0 {
				t.Fatalf("exit code %d:\n%s", code, g.Logs())
			}
			<-hang.Disconnected()
			<-done
		})
	}
}
