package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agents_endpoint: POST /mcp lists the agents each caller may use, one
// tool each, and a call runs the agent; an agent the caller may not use is
// neither listed nor callable; a caller without a token is refused.
func TestAgentsEndpoint(t *testing.T) {
	g := startGateway(t, `
name: dir
listen: "127.0.0.1:{{PORT}}"
agents_endpoint: true
auth:
  mode: tokens
  tokens:
    - {name: alice, token: alice-token-0123456789}
    - {name: bob, token: bob-token-0123456789ab, agents: ["echo*"]}
agents:
  echo: {model: passthrough, description: "says it back"}
  echo_two: {model: playback, params: {playback: ["second"]}}
  secret: {model: passthrough}
  pipe: {kind: chain, sequence: [echo]}
`)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", g.Port)
	for _, version := range []string{"", "2025-11-25"} {
		for caller, want := range map[string]string{"alice-token-0123456789": "echo echo_two pipe secret", "bob-token-0123456789ab": "echo echo_two"} {
			cs := pxConnect(t, url, version, map[string]string{"Authorization": "Bearer " + caller}, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
				if _, ok := tl.InputSchema.(map[string]any)["properties"].(map[string]any)["message"]; !ok {
					t.Errorf("%s has not send_message's arguments: %v", tl.Name, tl.InputSchema)
				}
			}
			sort.Strings(names)
			if strings.Join(names, " ") != want {
				t.Errorf("%q (%s) lists %v, want %s", version, caller[:3], names, want)
			}
			out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo_two", Arguments: map[string]any{"message": "hi"}})
			if err != nil || out.IsError || out.Content[0].(*mcp.TextContent).Text != "second" {
				t.Errorf("call echo_two: %v %+v", err, out)
			}
			out, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret", Arguments: map[string]any{"message": "hi"}})
			allowed := strings.Contains(want, "secret")
			if got := err == nil && !out.IsError; got != allowed {
				t.Errorf("%s calling secret: err %v result %+v, want allowed %v", caller[:3], err, out, allowed)
			}
		}
	}
	code, _, body := httpGet(t, url, nil)
	if code != 401 {
		t.Errorf("GET without a token: %d %s", code, body)
	}
}
