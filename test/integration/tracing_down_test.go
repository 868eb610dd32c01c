package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// TestTracingEndpointDown: with tracing on and its OTLP endpoint refusing
// connections (and another that accepts and never answers), agent calls
// answer as they do with tracing off, and the gateway stops as usual:
// export is in the background and bounded.
func TestTracingEndpointDown(t *testing.T) {
	t.Parallel() // its own gateway process and fakes; mostly waiting on timers
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	go func() { // accepts, reads nothing, never answers
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	for name, endpoint := range map[string]string{"refused": "http://" + refusedAddr, "hanging": "http://" + hang.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			e := startLLM(t, "  bot: {model: openai.fake-model}\n", llmOpts{extraTop: fmt.Sprintf("tracing: {endpoint: %q, sampling: 1.0}\n", endpoint)})
			for i := range 5 {
				if got := e.answer(t, "bot", fmt.Sprintf("hello %d", i)); !strings.Contains(got, fmt.Sprintf("hello %d", i)) {
					t.Fatalf("call %d: %q", i, got)
				}
			}
			start := time.Now()
			e.Stop()
			if e.ExitCode() != 0 {
				t.Errorf("exit code %d after stopping with the endpoint %s", e.ExitCode(), name)
			}
			t.Logf("stopped in %v with the endpoint %s", time.Since(start).Round(time.Millisecond), name)
		})
	}
}
