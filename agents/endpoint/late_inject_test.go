package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// lateSamplingAgents is a proxy over a downstream that sends
// sampling/createMessage and then its result at once, without waiting for
// the answer. mcp-go's client handles a server's request in a goroutine of
// its own, with a context that ends when the call returns; here that
// goroutine runs after delay and reports what Relay.Request returned.
func lateSamplingAgents(t *testing.T, delay time.Duration, fastOff bool, done chan<- string) *agenttest.Agents {
	t.Helper()
	down := &agenttest.FakeDown{ToolLists: map[string][]mcpgo.Tool{"files": {mcpgo.NewTool("late")}}}
	down.Relayed = func(ctx context.Context, _, _ string, _ map[string]any, _ mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
		hctx, cancel := context.WithCancel(ctx)
		go func() {
			time.Sleep(delay)
			_, err := rel.Request(hctx, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":1}`))
			done <- fmt.Sprint(err)
		}()
		defer cancel()
		return mcpgo.NewToolResultText("done without waiting"), nil
	}
	wire.SetFast(!fastOff) // the process's switch; the environment's off wins
	t.Cleanup(func() { wire.SetFast(true) })
	ta := agenttest.New(t, proxyFastConfig, down)
	if resp, body := post(t, ta, "px", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	return ta
}

// A downstream's request that comes after its call returned is refused, on
// both paths, and never written on the finished response (with -race: no
// race with the final answer's write; before the fix an injected event
// could land on another caller's connection).
func TestLateSamplingRequestIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		fastOff bool
		session string
	}{
		{"mcp-go path", true, "pgw-es-0123456789abcdef0123456789abcdef"},
		{"fast path", false, "pgw-s-0123456789abcdef0123456789abcdef"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": c.session}
			for _, delay := range []time.Duration{0, 30 * time.Millisecond} {
				const calls = 20
				done := make(chan string, calls)
				ta := lateSamplingAgents(t, delay, c.fastOff, done)
				var wg sync.WaitGroup
				for i := range calls {
					wg.Go(func() {
						_, body := post(t, ta, "px", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"late"}}`, i+2), hdr)
						// Without a delay the request may be sent while the call
						// still runs: then it comes before the answer, never after.
						answer, request := strings.Index(body, "done without waiting"), strings.Index(body, "sampling/createMessage")
						if answer < 0 || request > answer || (delay > 0 && request >= 0) {
							t.Errorf("delay %v: the caller got %q", delay, body)
						}
					})
				}
				wg.Wait()
				for range calls {
					got := <-done
					if got == "<nil>" {
						t.Errorf("delay %v: a late request was answered", delay)
					}
					if delay > 0 && !strings.Contains(got, "the call has ended") {
						t.Errorf("delay %v: late request: %s; want it refused because the call ended", delay, got)
					}
				}
			}
		})
	}
}
