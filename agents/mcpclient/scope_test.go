package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"
)

// sidServer is a stateful Streamable HTTP downstream whose tool "sid"
// answers the id of the session that called it, and that counts the
// sessions it saw closed (DELETE).
type sidServer struct {
	ts      *httptest.Server
	deletes atomic.Int64
}

func newSIDServer(t *testing.T) *sidServer {
	s := server.NewMCPServer("sid", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("sid"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(server.ClientSessionFromContext(ctx).SessionID()), nil
	})
	h := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	d := &sidServer{}
	d.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			d.deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *sidServer) spec(scope string) ServerSpec {
	return ServerSpec{Name: "sid", Transport: TransportHTTP, URL: d.ts.URL + "/mcp", Scope: scope}
}

type testCallerKey struct{}

// as is a context of caller (CallerOf reads it with testCallerOf).
func as(t *testing.T, caller string) context.Context {
	return context.WithValue(testCtx(t), testCallerKey{}, caller)
}

func testCallerOf(ctx context.Context) string {
	c, _ := ctx.Value(testCallerKey{}).(string)
	return c
}

// sidOf calls "sid" as caller, through the typed path or the raw one.
func sidOf(t *testing.T, m *Manager, caller string, raw bool) string {
	t.Helper()
	if raw {
		res, err := m.CallToolRaw(as(t, caller), "sid", "sid", nil, nil, nil, CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Content []struct{ Text string } }
		if err := json.Unmarshal(res.JSON, &r); err != nil || len(r.Content) != 1 {
			t.Fatalf("raw result %s: %v", res.JSON, err)
		}
		return r.Content[0].Text
	}
	res, err := m.CallTool(as(t, caller), "sid", "sid", nil, nil, nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return text(t, res)
}

// Two callers of a caller-scoped server never see the same downstream
// session, on the typed and the raw path; each keeps its own across calls;
// an anonymous caller and the tool list use the header set's session.
func TestScopeCallerSeparatesCallers(t *testing.T) {
	d := newSIDServer(t)
	mt := newMetrics()
	m := newManager(t, Options{CallerOf: testCallerOf, Metrics: mt}, d.spec(ScopeCaller))
	for _, raw := range []bool{false, true} {
		t.Run("raw="+strconv.FormatBool(raw), func(t *testing.T) {
			alice, bob := sidOf(t, m, "token:alice", raw), sidOf(t, m, "token:bob", raw)
			if alice == "" || bob == "" || alice == bob {
				t.Fatalf("alice's session %q, bob's %q: want two distinct sessions", alice, bob)
			}
			if again := sidOf(t, m, "token:alice", raw); again != alice {
				t.Errorf("alice's second call on %q, her first on %q", again, alice)
			}
			anon := sidOf(t, m, "", raw)
			if anon == alice || anon == bob || sidOf(t, m, Anonymous, raw) != anon {
				t.Errorf("anonymous calls on %q, alice %q, bob %q: want one session of their own", anon, alice, bob)
			}
		})
	}
	if _, err := m.Tools(as(t, "token:carol"), "sid", nil); err != nil {
		t.Fatal(err)
	}
	if n := m.servers["sid"].sessionCount(); n != 3 {
		t.Errorf("%d pooled sessions, want 3 (alice, bob, and the header set's for anonymous calls and tool lists)", n)
	}
	if g := gaugeValue(t, mt.DownstreamSessions.WithLabelValues("sid")); g != 3 {
		t.Errorf("pallasgw_downstream_sessions = %v, want 3", g)
	}
}

// Finding a pooled session makes nothing, whatever the scope: a caller's
// own session costs its calls no more than a shared one (the pool key is
// built on the stack).
func TestAcquirePooledAllocatesNothing(t *testing.T) {
	for _, scope := range []string{ScopeShared, ScopeCaller} {
		t.Run(scope, func(t *testing.T) {
			m := newManager(t, Options{CallerOf: testCallerOf}, ServerSpec{Name: "p", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp", Scope: scope})
			srv, err := m.lookup("p")
			if err != nil {
				t.Fatal(err)
			}
			ctx := as(t, "session:0123456789abcdef0123456789abcdef")
			first, err := srv.acquire(ctx, string(mcp.MethodToolsCall), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.release(first)
			allocs := testing.AllocsPerRun(100, func() {
				s, err := srv.acquire(ctx, string(mcp.MethodToolsCall), nil)
				if err != nil || s != first {
					t.Fatalf("acquire: %v, another session: %t", err, s != first)
				}
				srv.release(s)
			})
			if allocs != 0 {
				t.Errorf("finding the pooled session allocated %.0f times, want 0", allocs)
			}
		})
	}
}

// A shared server keeps one session for every caller of a header set.
func TestScopeSharedPools(t *testing.T) {
	d := newSIDServer(t)
	m := newManager(t, Options{CallerOf: testCallerOf}, d.spec(ScopeShared))
	alice, bob := sidOf(t, m, "token:alice", true), sidOf(t, m, "token:bob", false)
	if alice == "" || alice != bob {
		t.Fatalf("alice on %q, bob on %q: want one shared session", alice, bob)
	}
	if n := m.servers["sid"].sessionCount(); n != 1 {
		t.Errorf("%d pooled sessions, want 1", n)
	}
}

// A call-scoped server opens a session for each tool execution and closes
// it (DELETE) after; nothing of them stays open.
func TestScopeCallOpensAndClosesPerCall(t *testing.T) {
	d := newSIDServer(t)
	mt := newMetrics()
	m := newManager(t, Options{CallerOf: testCallerOf, Metrics: mt}, d.spec(ScopeCall))
	var seen []string
	for i, raw := range []bool{false, true, false} {
		sid := sidOf(t, m, "token:alice", raw)
		if sid == "" || slices.Contains(seen, sid) {
			t.Fatalf("call %d on session %q, earlier ones on %q: want a fresh one", i, sid, seen)
		}
		seen = append(seen, sid)
	}
	eventually(t, "the three sessions to be closed downstream", func() bool { return d.deletes.Load() == 3 })
	eventually(t, "pallasgw_downstream_sessions to fall to 0", func() bool {
		return gaugeValue(t, mt.DownstreamSessions.WithLabelValues("sid")) == 0
	})
	if n := m.servers["sid"].sessionCount(); n != 0 {
		t.Errorf("%d pooled sessions, want 0", n)
	}
}

// At its cap, a caller-scoped server closes the least recently used idle
// session for a new caller (logged and counted); the evicted caller's next
// call opens a fresh session.
func TestScopeCallerEvictsLeastRecentlyUsed(t *testing.T) {
	d := newSIDServer(t)
	mt := newMetrics()
	log, logs := observed(zap.NewAtomicLevelAt(zap.InfoLevel))
	spec := d.spec(ScopeCaller)
	spec.MaxSessions = 2
	m := newManager(t, Options{CallerOf: testCallerOf, Metrics: mt, Logger: log}, spec)
	a := sidOf(t, m, "token:a", false)
	b := sidOf(t, m, "token:b", false)
	sidOf(t, m, "token:c", false) // a is the least recently used
	if got := counterValue(t, mt.DownstreamEvictions.WithLabelValues("sid")); got != 1 {
		t.Errorf("pallasgw_downstream_session_evictions_total = %v, want 1", got)
	}
	if logs.FilterMessageSnippet("least recently used").Len() != 1 {
		t.Errorf("eviction not logged once: %v", logs.All())
	}
	if again := sidOf(t, m, "token:b", false); again != b {
		t.Errorf("b's session changed (%q, was %q) though a was the least recently used", again, b)
	}
	if again := sidOf(t, m, "token:a", false); again == a {
		t.Errorf("evicted a is still on %q", a)
	}
	if n := m.servers["sid"].sessionCount(); n != 2 {
		t.Errorf("%d pooled sessions, want the cap 2", n)
	}
	eventually(t, "the two evicted sessions to be closed", func() bool { return d.deletes.Load() == 2 })
}

// A caller-scoped stdio server starts one process per caller, never more
// than its cap at once: past it the least recently used idle process is
// stopped first, and when every process is busy the call is refused.
func TestScopeCallerStdioProcesses(t *testing.T) {
	spec := stdioSpec()
	spec.Scope, spec.MaxSessions = ScopeCaller, 2
	mt := newMetrics()
	m := newManager(t, Options{CallerOf: testCallerOf, Metrics: mt}, spec)
	srv := m.servers["files"]
	var mu sync.Mutex
	peak := 0
	stdioPid := func(caller string) int {
		t.Helper()
		res, err := m.CallTool(as(t, caller), "files", "pid", nil, nil, nil, CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		srv.mu.Lock()
		peak = max(peak, srv.live)
		srv.mu.Unlock()
		mu.Unlock()
		pid, err := strconv.Atoi(text(t, res))
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	a, b := stdioPid("token:a"), stdioPid("token:b")
	if a == b {
		t.Fatalf("callers a and b share process %d", a)
	}
	if again := stdioPid("token:a"); again != a {
		t.Errorf("a's second call ran in process %d, its first in %d", again, a)
	}
	c := stdioPid("token:c") // b is the least recently used: stopped first
	if c == a || c == b {
		t.Errorf("c ran in process %d of a (%d) or b (%d)", c, a, b)
	}
	if err := syscall.Kill(b, 0); err == nil {
		t.Errorf("evicted process %d of b still runs", b)
	}
	if peak > 2 {
		t.Errorf("%d sessions open at once, cap 2", peak)
	}

	// Both processes busy: a third caller is refused, not given a third.
	ctx, cancel := context.WithCancel(as(t, "token:a"))
	defer cancel()
	ctxC, cancelC := context.WithCancel(as(t, "token:c"))
	defer cancelC()
	var wg sync.WaitGroup
	for _, ctx := range []context.Context{ctx, ctxC} {
		wg.Go(func() { _, _ = m.CallTool(ctx, "files", "block", nil, nil, nil, CallOptions{}) })
	}
	eventually(t, "both processes to be busy", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		busy := 0
		for _, s := range srv.pool {
			if s.refs > 0 {
				busy++
			}
		}
		return busy == 2
	})
	_, err := m.CallTool(as(t, "token:d"), "files", "pid", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("a third caller with both processes busy: %v, want ErrUnavailable", err)
	}
	cancel()
	cancelC()
	wg.Wait()
	if g := gaugeValue(t, mt.DownstreamSessions.WithLabelValues("files")); g > 2 {
		t.Errorf("pallasgw_downstream_sessions = %v, cap 2", g)
	}
}
