package integration

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestCancelFromAnotherClientIsIgnored: in stateless mode mcp-go keys
// in-flight requests by id alone; a notifications/cancelled for id 7 from a
// second client must not cancel the first client's request 7.
func TestCancelFromAnotherClientIsIgnored(t *testing.T) {
	llm := fakellm.New(t)
	llm.SetEchoDelay(time.Second)
	g := startGateway(t, fmt.Sprintf(shutdownCfg, "5s", "0s", llm.OpenAIBaseURL()))
	done := make(chan string, 1)
	go func() {
		resp, err := post(g.Base+"/agents/slow/mcp", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send_message","arguments":{"message":"keep going"}}}`, nil)
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	eventually(t, 10*time.Second, "the call reaching the model", func() bool { return len(llm.ChatRequests()) == 1 })
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"not yours"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		resp, err := post(g.Base+"/agents/slow/mcp", body, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("cancel answered %d", resp.StatusCode)
		}
	}
	if got := <-done; !strings.Contains(got, `"text":"echo: keep going"`) {
		t.Fatalf("request 7 was canceled by another client: %s", got)
	}
}

func TestCallerAgentRules(t *testing.T) {
	g := startGateway(t, `
name: callers
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
policy:
  callers:
    web: {agents: ["public_*"]}
agents:
  public_echo: {}
  internal: {}
`)
	for _, c := range []struct {
		token, agent string
		want         int
	}{
		{"web", "public_echo", 200}, {"web", "internal", 403}, {"ops", "internal", 200},
	} {
		resp, err := post(g.Base+"/agents/"+c.agent+"/mcp", listTools, map[string]string{"Authorization": "Bearer " + c.token + "-token-0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s -> %s: %d, want %d", c.token, c.agent, resp.StatusCode, c.want)
		}
	}
	if v, _ := g.metric(t, `pallasgw_policy_decisions_total{agent="internal",caller="web",decision="deny",reason="agent_not_allowed"}`); v != 1 {
		t.Errorf("deny not counted: %v", v)
	}
	if !g.logged(`"caller":"web"`) {
		t.Error("no audit line naming the caller")
	}
}
