package endpoint_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
)

// Every request mcp-go (v1.2.1) would refuse with a text/plain body
// (writeHTTPError) and that can reach an endpoint gets a JSON-RPC error
// instead, with mcp-go's status and the request id; what mcp-go accepts
// still reaches it. The gateway's own checks (Content-Type, an unknown
// version on a POST, GET) answer first in a gateway; here the endpoint
// stands alone, so wire.Refuse answers them.
func TestEndpointAnswersJSONRPCWhereMCPGoAnswersPlainText(t *testing.T) {
	ta := agenttest.New(t, agenttest.ProxyOneServer, agenttest.OneServerDown())
	const modern = "2026-07-28"
	for _, c := range []struct {
		name, method, body, ct, version, session string
		status                                   int
		want                                     string // in the error message; "" for an accepted request
	}{
		{"DELETE of a 2026-07-28 caller", "DELETE", "", "", modern, "", 405, "DELETE is not supported in protocol version 2026-07-28"},
		{"DELETE with an unknown version", "DELETE", "", "", "1999-01-01", "pgw-abc", 400, "Unsupported protocol version: 1999-01-01"},
		{"DELETE of a session", "DELETE", "", "", "2025-11-25", "pgw-abc", 200, ""},
		{"GET", "GET", "", "", "", "", 405, "GET is not served"},
		{"HEAD", "HEAD", "", "", "", "", 405, ""},
		{"PUT", "PUT", "{}", "application/json", "", "", 405, "PUT is not served"},
		{"POST as text/plain", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "text/plain", "", "", 400, "Invalid content type"},
		{"POST of a broken body as text/plain", "POST", `{`, "text/plain", "", "", 400, "Invalid content type"},
		{"POST with an unknown version", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json", "1999-01-01", "pgw-abc", 400, "Unsupported protocol version"},
		{"a response without a session", "POST", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, "application/json", "", "", 400, "must carry the Mcp-Session-Id"},
		{"a response nobody waits for", "POST", `{"jsonrpc":"2.0","id":5,"result":{"x":1}}`, "application/json", "2025-11-25", "pgw-abc", 404, "no request 5 is waiting"},
		{"an error response nobody waits for", "POST", `{"jsonrpc":"2.0","id":"z","error":{"code":1,"message":"m"}}`, "application/json", "", "pgw-abc", 404, `no request "z" is waiting`},
		{"an empty response (a ping's answer)", "POST", `{"jsonrpc":"2.0","id":5,"result":{}}`, "application/json", "", "pgw-abc", 202, ""},
		{"a ping", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "application/json", "2025-11-25", "pgw-abc", 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, ta.Srv.URL+"/px", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range map[string]string{"Content-Type": c.ct, "Mcp-Protocol-Version": c.version, "Mcp-Session-Id": c.session} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type %q: %s", ct, b)
			}
			if c.want == "" || c.method == "HEAD" {
				return
			}
			var msg struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &msg); err != nil || msg.JSONRPC != "2.0" || msg.Error == nil {
				t.Fatalf("not a JSON-RPC error (%v): %s", err, b)
			}
			if !strings.Contains(msg.Error.Message, c.want) || !strings.Contains(msg.Error.Message, "(request id rid-1)") {
				t.Errorf("message %q, want %q and the request id", msg.Error.Message, c.want)
			}
		})
	}
}
