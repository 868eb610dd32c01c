package integration

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestQuotas: a caller over its request rate gets 429 with Retry-After;
// a caller over its LLM token budget gets a JSON-RPC error that says when
// to retry, before any more tokens are spent; each refusal is counted by
// the caller's rule; other callers are untouched.
func TestQuotas(t *testing.T) {
	e := startLLM(t, "  bot: {model: openai.fake-model}\n", llmOpts{extraTop: `auth:
  mode: tokens
  tokens:
    - {name: chatty, token: chatty-token-0123456789}
    - {name: thrifty, token: thrifty-token-0123456789}
    - {name: other, token: other-token-0123456789}
policy:
  callers:
    chatty: {limits: {requests_per_minute: 3}}
    thrifty: {limits: {tokens_per_day: 25}}
`})
	url := e.agentURL("bot")

	t.Run("request rate", func(t *testing.T) {
		codes := []int{}
		var retry string
		for range 5 {
			resp, err := post(url, listTools, map[string]string{"Authorization": "Bearer chatty-token-0123456789"})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == http.StatusTooManyRequests {
				retry = resp.Header.Get("Retry-After")
			}
		}
		if fmt.Sprint(codes) != "[200 200 200 429 429]" {
			t.Errorf("statuses %v, want three allowed then 429", codes)
		}
		if s, err := strconv.Atoi(retry); err != nil || s < 1 || s > 20 {
			t.Errorf("Retry-After %q, want about 20 s", retry)
		}
		if resp, _ := post(url, listTools, map[string]string{"Authorization": "Bearer other-token-0123456789"}); resp == nil || resp.StatusCode != 200 {
			t.Error("another caller was limited too")
		}
		e.waitSeries(t, `pallasgw_quota_rejections_total{caller="chatty",reason="requests_per_minute"}`, 2)
	})

	t.Run("token budget", func(t *testing.T) {
		e.oai.Script(fakellm.Text("first answer").Usage(10, 5), fakellm.Text("second answer").Usage(10, 5))
		cs, err := bearerSession(t, url, "thrifty-token-0123456789")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i, want := range []string{"first answer", "second answer"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "hi"}})
			if err != nil || res.IsError || !strings.Contains(resultText(res), want) {
				t.Fatalf("call %d within the budget: %v %+v", i+1, err, res)
			}
		}
		before := len(e.oai.ChatRequests())
		// 30 tokens spent of 25: the next call is refused before the model.
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "hi"}})
		if err == nil || !strings.Contains(err.Error(), "budget of 25 LLM tokens") || !strings.Contains(err.Error(), "retry after") {
			t.Errorf("over the budget: %v, want a JSON-RPC error saying when to retry", err)
		}
		if n := len(e.oai.ChatRequests()); n != before {
			t.Errorf("%d more model calls over the budget", n-before)
		}
		e.waitSeries(t, `pallasgw_quota_rejections_total{caller="thrifty",reason="tokens_per_day"}`, 1)
	})
}
