package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventually polls cond until it holds: for timeout at least, and on a
// loaded machine until shortly before the test binary's own deadline (go
// test -timeout), so that load makes a test slower, never failing.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok && d.Add(-10*time.Second).After(deadline) {
			deadline = d.Add(-10 * time.Second)
		}
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logged waits up to 5 s for the gateway's log to contain s. The gateway
// buffers its log and writes it out at least once a second (cmd/pallasgw,
// logFlushInterval), so a line is not there as soon as its event is.
func (g *gw) logged(s string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Logs(), s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// allLogs stops the gateway, which writes out its buffered log, and returns
// the whole log: for checks that something is absent from it.
func (g *gw) allLogs() string {
	g.Stop()
	return g.Logs()
}

// metric reads one sample (name with labels exactly as exposed) from /metrics.
func (g *gw) metric(t testing.TB, series string) (float64, bool) {
	t.Helper()
	return g.Metric(series)
}

// writeConfig replaces the config file in place (as `cat > file` would).
func (g *gw) writeConfig(t testing.TB, cfg string) {
	t.Helper()
	if err := g.WriteConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// renameConfig replaces the config the way editors do: write a temporary
// file beside it and rename it over the original.
func (g *gw) renameConfig(t testing.TB, cfg string) {
	t.Helper()
	if err := g.RenameConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// reload posts /-/reload and returns the status and decoded answer.
func (g *gw) reload(t testing.TB) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(g.Base+"/-/reload", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// status fetches /-/status.
func (g *gw) status(t testing.TB) map[string]any {
	t.Helper()
	resp, err := http.Get(g.Base + "/-/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// call sends send_message and returns the text or an error describing any
// failure, including an isError result.
func call(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("isError result: %s", b.String())
	}
	return b.String(), nil
}

// refused reports whether nothing listens on the port any more.
func refused(port int) bool {
	c, err := (&http.Client{Timeout: time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	if err != nil {
		return strings.Contains(err.Error(), "connection refused")
	}
	c.Body.Close()
	return false
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
