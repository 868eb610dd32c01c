package wire

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// An injected request opens the SSE stream; mcp-go, its session upgraded
// before the injection, writes its answer as the next event itself: the
// writer reframes nothing.
func TestInjectOnAnUpgradedSession(t *testing.T) {
	type key struct{}
	s := server.NewMCPServer("t", "1.0.0")
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ss, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig)
		if !ok {
			return nil, errors.New("no streamable HTTP session")
		}
		ss.UpgradeToSSEWhenReceiveNotification() // as endpoint.Request does
		if err := ctx.Value(key{}).(*Response).Inject([]byte(`{"jsonrpc":"2.0","id":"pgw-r-1","method":"roots/list"}`)); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStateLess(true))
	rec := httptest.NewRecorder()
	var events eventCount
	w := NewResponse(rec, "", &events)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	h.Handle(w, &server.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header, Body: []byte(body),
		Context: context.WithValue(r.Context(), key{}, w)})
	got := rec.Body.String()
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"pgw-r-1\",\"method\":\"roots/list\"}\n\n"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("body\n%q\nwant it to begin with\n%q", got, want)
	}
	data, ok := EventData([]byte(strings.TrimPrefix(got, want)))
	if !ok || !strings.Contains(string(data), `"id":7`) || !strings.Contains(string(data), `"text":"ok"`) {
		t.Errorf("mcp-go's answer is not the next event: %q", strings.TrimPrefix(got, want))
	}
	if ct := rec.Result().Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if n := events; n != 2 {
		t.Errorf("%d events counted, want 2", n)
	}
}

// On a stream mcp-go opened, an injected event goes between its events,
// and its own events pass unchanged; on a JSON answer nothing can be added.
func TestInjectOnAStreamAndAfterJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewResponse(rec, "", nil)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("event: message\ndata: {\"n\":1}\n\n"))
	if err := w.Inject([]byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("event: message\ndata: {\"n\":3}\n\n"))
	want := "event: message\ndata: {\"n\":1}\n\nevent: message\ndata: {\"n\":2}\n\nevent: message\ndata: {\"n\":3}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body %q, want %q", got, want)
	}

	rec = httptest.NewRecorder()
	w = NewResponse(rec, "", nil)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := w.Inject([]byte(`{}`)); err != ErrNotStreaming {
		t.Errorf("Inject after a JSON answer began: %v, want ErrNotStreaming", err)
	}
}

func TestWithRequestID(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"mcp-go's method not found", `{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method tools/explode not found"}}` + "\n",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method tools/explode not found (request id rid-1)"}}` + "\n"},
		{"data kept, escapes as encoding/json writes them", `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"tool \u003cx\u003e","data":{"k":[1,2]}}}`,
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"tool \u003cx\u003e (request id rid-1)","data":{"k":[1,2]}}}`},
		{"names the request id already", `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"too big (request id rid-1)"}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"too big (request id rid-1)"}}`},
		{"a result that mentions errors", `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"code":1,"message":"m"}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"code":1,"message":"m"}}}}`},
		{"an unknown member", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"x":1}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"x":1}`},
		{"an unknown error member", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":1}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":1}}`},
		{"a message that is not a string", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":7}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":7}}`},
		{"a part of an answer", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"`},
	} {
		if got := string(withRequestID([]byte(tc.in), "rid-1")); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// mcp-go's error answers, as JSON or as an SSE event, carry the request id
// through Response; other writes pass unchanged.
func TestResponseAddsTheRequestID(t *testing.T) {
	errJSON := `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method x not found"}}`
	withID := `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method x not found (request id rid-7)"}}`
	for _, tc := range []struct{ name, ct, in, want string }{
		{"JSON", "application/json", errJSON + "\n", withID + "\n"},
		{"SSE event", "text/event-stream", "event: message\ndata: " + errJSON + "\n\n", "event: message\ndata: " + withID + "\n\n"},
		{"a result", "application/json", `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n", `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n"},
	} {
		rec := httptest.NewRecorder()
		w := NewResponse(rec, "rid-7", nil)
		w.Header().Set("Content-Type", tc.ct)
		if n, err := w.Write([]byte(tc.in)); err != nil || n != len(tc.in) {
			t.Errorf("%s: Write = %d, %v", tc.name, n, err)
		}
		if got := rec.Body.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// eventCount counts the events a Response writes.
type eventCount int

func (n *eventCount) Wrote() { *n++ }
