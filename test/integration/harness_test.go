// Package integration starts the real pallasgw binary on real ports and
// drives it with independent MCP clients (the official Go SDK).
package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

func TestMain(m *testing.M) { gwtest.Main(m, true) }

// binary is the race-enabled pallasgw binary gwtest.Main built.
var binary = gwtest.Binary

var freePorts = gwtest.FreePorts

// gw is one running gateway process.
type gw struct {
	*gwtest.Gateway
}

// startGateway writes cfg (with {{PORT}} replaced by the main port) and runs
// `pallasgw serve` on it until the test ends.
func startGateway(t testing.TB, cfg string, env ...string) *gw {
	t.Helper()
	return &gw{gwtest.Start(t, gwtest.Options{Config: cfg, Env: env})}
}

// startGatewayAt runs `pallasgw serve` on an existing config file whose
// listen port is port.
func startGatewayAt(t testing.TB, path string, port int, env ...string) *gw {
	t.Helper()
	return &gw{gwtest.Start(t, gwtest.Options{ConfigPath: path, Port: port, Env: env})}
}

// connect opens a Go SDK client session to url; version "" is the SDK's
// default (sessionless 2026-07-28), "2025-11-25" the session-based style.
func connect(t testing.TB, url, version string, onProgress func(*mcp.ProgressNotificationClientRequest)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%q): %v", url, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func httpGet(t testing.TB, url string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
		if strings.EqualFold(k, "Host") {
			req.Host = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func textOf(t testing.TB, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) != 1 {
		t.Fatalf("want one content block, got %d", len(r.Content))
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want text content, got %T", r.Content[0])
	}
	return tc.Text
}
