package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// cutServer is a downstream whose "cut" tool answers with the start of an
// SSE stream and then loses its connection; "echo" works.
func cutServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := server.NewMCPServer("cut", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("fine"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"name":"cut"`)) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":")
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestStreamCutMidCallIsUnavailable(t *testing.T) {
	ts := cutServer(t)
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt}, ServerSpec{Name: "cut", URL: ts.URL + "/mcp", Timeout: 30 * time.Second})
	if _, err := m.CallTool(testCtx(t), "cut", "echo", nil, nil, nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := m.CallTool(testCtx(t), "cut", "cut", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "session lost during the call") {
		t.Fatalf("err = %v, want ErrUnavailable: session lost during the call", err)
	}
	if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("cut", "unavailable")); got != 1 {
		t.Fatalf("downstream calls unavailable = %v, want 1", got)
	}
	res, err := m.CallTool(testCtx(t), "cut", "echo", nil, nil, nil, CallOptions{})
	if err != nil || text(t, res) != "fine" {
		t.Fatalf("the call after the cut: %v", err)
	}
}

func TestTimeoutErrorNamesTheServerTimeout(t *testing.T) {
	d := newDownstream(t, false)
	spec := d.spec("argos")
	spec.Timeout = 200 * time.Millisecond
	m := newManager(t, Options{}, spec)

	_, err := m.CallTool(testCtx(t), "argos", "wait", map[string]any{"id": "a"}, nil, nil, CallOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within the server's timeout of 200ms") {
		t.Fatalf("err = %v, want the server's timeout named", err)
	}
	receive(t, "the first call to be canceled", d.canceled)

	// A caller's own, shorter deadline is not the server's timeout.
	spec.Timeout = time.Minute
	m = newManager(t, Options{}, spec)
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	_, err = m.CallTool(ctx, "argos", "wait", map[string]any{"id": "b"}, nil, nil, CallOptions{})
	if Outcome(err) != "timeout" || strings.Contains(err.Error(), "server's timeout") {
		t.Fatalf("err = %v, want a timeout not blamed on the server", err)
	}
}
