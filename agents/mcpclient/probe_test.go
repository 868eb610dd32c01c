package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func TestProbeHTTP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stateful bool
	}{{"default", false}, {"stateful", true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDownstream(t, tc.stateful)
			m := newManager(t, Options{}, d.spec("argos"))
			if err := m.Probe(testCtx(t), "argos", hdr("X-Tenant", "probe")); err != nil {
				t.Fatal(err)
			}
			inits := d.requests("POST", "initialize")
			if len(inits) != 1 || inits[0].header.Get("X-Tenant") != "probe" {
				t.Fatalf("initialize requests = %+v", inits)
			}
			dels := d.requests("DELETE", "")
			if len(dels) != 1 {
				t.Fatalf("DELETE requests = %d, want 1", len(dels))
			}
			if dels[0].header.Get("X-Tenant") != "probe" || dels[0].header.Get("Mcp-Session-Id") == "" {
				t.Fatalf("DELETE headers = %v", dels[0].header)
			}
			if n := m.servers["argos"].sessionCount(); n != 0 {
				t.Fatalf("the probe pooled %d sessions", n)
			}
		})
	}
}

func TestProbeRejected(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(ts.Close)
	m := newManager(t, Options{}, ServerSpec{Name: "locked", URL: ts.URL})
	if err := m.Probe(testCtx(t), "locked", nil); Outcome(err) != "unavailable" {
		t.Fatalf("Probe err = %v, want unavailable", err)
	}
}

// sseDownstream serves the downstream's tools over mcp-go's legacy SSE
// transport, recording what it receives like the Streamable one.
func sseDownstream(t *testing.T) (*downstream, string) {
	d := newDownstream(t, false)
	sse := server.NewSSEServer(d.mcp.Load(), server.WithSSEContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Clone())
	}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.seen = append(d.seen, seen{method: r.Method, header: r.Header.Clone()})
		d.mu.Unlock()
		sse.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	server.WithBaseURL(ts.URL)(sse)
	return d, ts.URL + "/sse"
}

func TestSSE(t *testing.T) {
	d, url := sseDownstream(t)
	m := newManager(t, Options{}, ServerSpec{Name: "legacy", Transport: TransportSSE, URL: url})
	ctx := testCtx(t)
	tools, err := m.Tools(ctx, "legacy", hdr("X-Tenant", "s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	res, err := m.CallTool(ctx, "legacy", "whoami", nil, hdr("X-Tenant", "s"), nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "s" {
		t.Fatalf("downstream saw X-Tenant %q", got)
	}
	for _, r := range d.requests("GET", "") {
		if r.header.Get("X-Tenant") != "s" {
			t.Fatalf("SSE stream opened without the headers: %v", r.header)
		}
	}
	if err := m.Probe(ctx, "legacy", hdr("X-Tenant", "s")); err != nil {
		t.Fatalf("Probe: %v", err)
	}
}
