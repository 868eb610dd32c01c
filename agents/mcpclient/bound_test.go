package mcpclient

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// boundServer is an mcp-go server whose answers can be made larger than
// testLimit is the bound on one message in these tests (4 KiB: the
// default, 64 MiB, behaves the same and costs the machine 64 MiB a case).
const testLimit = 4 << 10

// testLimit: the tool big answers n bytes of text (with progress first
// when asked: an SSE answer), and with wide set its tool list and its
// resource are larger than testLimit too.
func boundServer(wide bool) *server.MCPServer {
	s := server.NewMCPServer("bound", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false))
	s.AddTool(mcp.NewTool("big", mcp.WithNumber("n")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
		}
		return mcp.NewToolResultText(strings.Repeat("x", req.GetInt("n", 0))), nil
	})
	if wide {
		s.AddTool(mcp.NewTool("wide", mcp.WithDescription(strings.Repeat("d", 4*testLimit))), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
		s.AddResource(mcp.NewResource("res://big", "big"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "res://big", Text: strings.Repeat("r", 4*testLimit)}}, nil
		})
	}
	return s
}

// Every read of a downstream holds to Options.MaxMessageBytes, whichever
// path the call takes: mcp-go's client (a typed call, the tool list, a
// resource; JSON or SSE answers; Streamable HTTP or the legacy SSE
// transport) as well as the raw call, on a fresh session and a warm one.
// A message past the bound fails its call saying so; a small call after
// it works.
func TestEveryReadIsBounded(t *testing.T) {
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		t.Run(tr, func(t *testing.T) {
			serve := func(wide bool) string {
				s := boundServer(wide)
				if tr == TransportSSE {
					sse := server.NewSSEServer(s)
					ts := httptest.NewServer(sse)
					t.Cleanup(ts.Close)
					t.Cleanup(func() { _ = sse.Shutdown(context.Background()) })
					return ts.URL + "/sse"
				}
				ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
				t.Cleanup(ts.Close)
				return ts.URL + "/mcp"
			}
			m := newManager(t, Options{MaxMessageBytes: testLimit},
				ServerSpec{Name: "calls", Transport: tr, URL: serve(false)},
				ServerSpec{Name: "wide", Transport: tr, URL: serve(true)})
			ctx := testCtx(t)
			big := map[string]any{"n": 4 * testLimit}
			tooLarge := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes, the limit of one message") {
					t.Errorf("%s: error %v, want the message refused as larger than the bound", what, err)
				}
			}
			_, err := m.CallToolRaw(ctx, "calls", "big", []byte(`{"n":16384}`), nil, nil, CallOptions{})
			tooLarge("raw call, fresh session", err)
			_, err = m.CallToolRaw(ctx, "calls", "big", []byte(`{"n":16384}`), nil, nil, CallOptions{})
			tooLarge("raw call", err)
			_, err = m.CallTool(ctx, "calls", "big", big, nil, nil, CallOptions{})
			tooLarge("typed call", err)
			_, err = m.CallTool(ctx, "calls", "big", big, nil, func(float64, *float64, string) {}, CallOptions{})
			tooLarge("typed call answered on SSE", err)
			_, err = m.CallToolJSON(ctx, "calls", "big", []byte(`{"n":16384}`), nil, nil, CallOptions{})
			tooLarge("call with JSON arguments", err)
			res, err := m.CallTool(ctx, "calls", "big", map[string]any{"n": 100}, nil, nil, CallOptions{})
			if err != nil || len(text(t, res)) != 100 {
				t.Errorf("a small call after: %v", err)
			}
			_, err = m.Tools(ctx, "wide", nil)
			tooLarge("tool list", err)
			_, err = m.ReadResource(ctx, "wide", "res://big", nil, nil)
			tooLarge("resource", err)
			if err := m.Probe(ctx, "calls", nil); err != nil {
				t.Errorf("probe: %v", err)
			}
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("a too large message made the server unavailable: %v", err)
			}
		})
	}
}
