//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// gatewayBodyLimit is the gateway's default limits.max_body_bytes.
const gatewayBodyLimit = 10 << 20

// toolsCallOfSize is a tools/call of the agent's get_health, its
// arguments padded so that the whole body is n bytes.
func toolsCallOfSize(n int) []byte {
	head := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_health","arguments":{"pad":"`
	tail := `"}}}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// post sends body to url as a JSON-RPC POST and returns the answer.
func post(t *testing.T, url string, body []byte) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %d bytes to %s: %v", len(body), url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %d bytes to %s: reading the answer: %v", len(body), url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// checkBodyLimit posts bodies around the gateway's limit through the
// proxy: one of exactly the limit reaches the agent, and those just over
// it get the gateway's JSON-RPC 413, not the proxy's own refusal (nginx's
// HTML page, or Caddy's empty 502 when its request_body max_size cuts the
// stream).
func checkBodyLimit(t *testing.T, base string) {
	url := base + "/agents/worker/mcp"
	code, _, body := post(t, url, toolsCallOfSize(gatewayBodyLimit))
	if code != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("a body of exactly %d bytes through the proxy: %d %.300s, want the agent's answer", gatewayBodyLimit, code, body)
	}
	for _, n := range []int{gatewayBodyLimit + 1, 11_000_000} {
		code, hdr, body := post(t, url, toolsCallOfSize(n))
		var e struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if code != http.StatusRequestEntityTooLarge || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") ||
			json.Unmarshal([]byte(body), &e) != nil || e.JSONRPC != "2.0" || e.Error.Code != -32600 ||
			!strings.Contains(e.Error.Message, "limits.max_body_bytes") {
			t.Errorf("a body of %d bytes through the proxy: %d %q %.300s, want the gateway's JSON-RPC 413",
				n, code, hdr.Get("Content-Type"), body)
		}
	}
}
