package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// listGate sits in front of a downstream and holds every tools/list POST
// until the test lets it through.
type listGate struct {
	d       *downstream
	ts      *httptest.Server
	lists   atomic.Int32  // tools/list POSTs received
	arrived chan heldList // one per tools/list POST, in arrival order
}

// heldList is one held tools/list.
type heldList struct {
	pass chan bool     // true: the downstream answers; false: a JSON-RPC error
	gone chan struct{} // closed if the request's context ended while held
}

func newListGate(t *testing.T) *listGate {
	g := &listGate{d: newDownstream(t, false), arrived: make(chan heldList, 512)}
	g.ts = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.ts.Close)
	return g
}

func (g *listGate) spec(name string) ServerSpec {
	return ServerSpec{Name: name, Transport: TransportHTTP, URL: g.ts.URL + "/mcp"}
}

func (g *listGate) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	if r.Method != http.MethodPost || msg.Method != string(mcp.MethodToolsList) {
		g.d.serve(w, r)
		return
	}
	g.lists.Add(1)
	h := heldList{pass: make(chan bool, 1), gone: make(chan struct{})}
	g.arrived <- h
	select {
	case ok := <-h.pass:
		if ok {
			g.d.serve(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"listing failed"}}`, msg.ID)
	case <-r.Context().Done():
		close(h.gone)
	}
}

// next returns the next held tools/list.
func (g *listGate) next(t *testing.T) heldList {
	t.Helper()
	return receive(t, "a tools/list downstream", g.arrived)
}

// fetchWaiters returns the callers waiting on m's tool-list fetches.
func fetchWaiters(m *Manager) int {
	m.fetches.mu.Lock()
	defer m.fetches.mu.Unlock()
	n := 0
	for _, f := range m.fetches.flights {
		n += f.waiters
	}
	return n
}

// cacheWarm reports whether a session of server has a cached tool list.
func cacheWarm(m *Manager, server string) bool {
	srv := m.servers[server]
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, s := range srv.pool {
		if _, _, ok, _ := s.tools.get(time.Hour); ok {
			return true
		}
	}
	return false
}

type toolsResult struct {
	tools []mcp.Tool
	err   error
}

// goTools calls Tools on a goroutine and returns where its result will come.
func goTools(ctx context.Context, m *Manager, server string) <-chan toolsResult {
	out := make(chan toolsResult, 1)
	go func() {
		tools, err := m.Tools(ctx, server, nil)
		out <- toolsResult{tools, err}
	}()
	return out
}

// waitingCallers starts n Tools calls of argos and returns their results
// once all of them wait on the one fetch.
func waitingCallers(t *testing.T, ctx context.Context, m *Manager, n int) []<-chan toolsResult {
	t.Helper()
	results := make([]<-chan toolsResult, n)
	for i := range results {
		results[i] = goTools(ctx, m, "argos")
	}
	eventually(t, "every caller waiting on the fetch", func() bool { return fetchWaiters(m) == n })
	return results
}

func TestToolsColdCacheSharesOneList(t *testing.T) {
	const callers = 64
	g := newListGate(t)
	m := newManager(t, Options{}, g.spec("argos"))
	ctx := testCtx(t)

	results := waitingCallers(t, ctx, m, callers)
	g.next(t).pass <- true
	for i, ch := range results {
		res := receive(t, "a Tools result", ch)
		if res.err != nil || !strings.Contains(toolNames(res.tools), "echo") {
			t.Fatalf("caller %d: tools %q, err %v", i, toolNames(res.tools), res.err)
		}
	}
	if n := g.lists.Load(); n != 1 {
		t.Fatalf("%d concurrent cold calls sent %d tools/list, want 1", callers, n)
	}
	if _, err := m.Tools(ctx, "argos", nil); err != nil || g.lists.Load() != 1 {
		t.Fatalf("after the fetch: err %v, tools/list sent %d times, want 1 (cached)", err, g.lists.Load())
	}
}

func TestToolsInvalidateDuringFetch(t *testing.T) {
	g := newListGate(t)
	m := newManager(t, Options{}, g.spec("argos"))
	ctx := testCtx(t)

	before := goTools(ctx, m, "argos")
	first := g.next(t)
	m.Invalidate("argos")
	// A caller after the invalidation does not join the older fetch.
	after := goTools(ctx, m, "argos")
	second := g.next(t)

	first.pass <- true
	if res := receive(t, "the first caller's result", before); res.err != nil {
		t.Fatal(res.err)
	}
	if cacheWarm(m, "argos") {
		t.Fatal("a list fetched before Invalidate was cached")
	}
	// A third caller joins the fetch of the current generation.
	third := goTools(ctx, m, "argos")
	eventually(t, "two callers on the second fetch", func() bool { return fetchWaiters(m) == 2 })
	second.pass <- true
	for _, ch := range []<-chan toolsResult{after, third} {
		if res := receive(t, "a Tools result", ch); res.err != nil {
			t.Fatal(res.err)
		}
	}
	if !cacheWarm(m, "argos") {
		t.Fatal("the list fetched after Invalidate was not cached")
	}
	if n := g.lists.Load(); n != 2 {
		t.Fatalf("tools/list sent %d times, want 2", n)
	}
}

func TestToolsFetchOutlivesCanceledCaller(t *testing.T) {
	g := newListGate(t)
	m := newManager(t, Options{}, g.spec("argos"))
	ctx := testCtx(t)

	leadCtx, cancelLead := context.WithCancel(ctx)
	lead := goTools(leadCtx, m, "argos")
	held := g.next(t)
	other := goTools(ctx, m, "argos")
	eventually(t, "two callers on the fetch", func() bool { return fetchWaiters(m) == 2 })

	cancelLead()
	if res := receive(t, "the canceled caller's result", lead); !errors.Is(res.err, context.Canceled) {
		t.Fatalf("canceled caller: err = %v, want context.Canceled", res.err)
	}
	held.pass <- true
	if res := receive(t, "the other caller's result", other); res.err != nil {
		t.Fatalf("the other caller failed with its leader: %v", res.err)
	}
	if n := g.lists.Load(); n != 1 {
		t.Fatalf("tools/list sent %d times, want 1", n)
	}
}

func TestToolsFetchAbandonedByLastCaller(t *testing.T) {
	g := newListGate(t)
	m := newManager(t, Options{}, g.spec("argos"))
	ctx := testCtx(t)

	callCtx, cancel := context.WithCancel(ctx)
	res := goTools(callCtx, m, "argos")
	held := g.next(t)
	cancel()
	if r := receive(t, "the canceled caller's result", res); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", r.err)
	}
	receive(t, "the abandoned tools/list canceled downstream", held.gone)
	eventually(t, "no fetch in flight", func() bool { return fetchWaiters(m) == 0 })

	// The next caller starts a fetch of its own.
	res = goTools(ctx, m, "argos")
	g.next(t).pass <- true
	if r := receive(t, "a Tools result", res); r.err != nil {
		t.Fatal(r.err)
	}
}

func TestToolsFetchErrorReachesEveryWaiter(t *testing.T) {
	const callers = 8
	g := newListGate(t)
	m := newManager(t, Options{}, g.spec("argos"))
	ctx := testCtx(t)

	results := waitingCallers(t, ctx, m, callers)
	g.next(t).pass <- false
	for i, ch := range results {
		if res := receive(t, "a Tools result", ch); res.err == nil || !strings.Contains(res.err.Error(), "listing failed") {
			t.Fatalf("caller %d: err = %v, want the downstream's error", i, res.err)
		}
	}
	if cacheWarm(m, "argos") {
		t.Fatal("a failed fetch left the cache warm")
	}
	res := goTools(ctx, m, "argos")
	g.next(t).pass <- true
	if r := receive(t, "a Tools result", res); r.err != nil {
		t.Fatal(r.err)
	}
	if n := g.lists.Load(); n != 2 {
		t.Fatalf("tools/list sent %d times, want 2 (the error is not cached)", n)
	}
}

// BenchmarkToolsColdCache measures rounds of concurrent Tools calls on a
// cache just invalidated: "shared" is Tools, "unshared" lists per caller as
// Tools did before fetches were shared. lists/op is the tools/list requests
// the downstream received per round.
func BenchmarkToolsColdCache(b *testing.B) {
	const callers = 128
	unshared := func(m *Manager, ctx context.Context) error {
		return m.do(ctx, "argos", string(mcp.MethodToolsList), nil, func(ctx context.Context, s *session, cli *client.Client) error {
			_, gen, ok, _ := s.tools.get(time.Hour)
			if ok {
				return nil
			}
			list, err := m.listTools(ctx, "argos", cli)
			if err == nil {
				s.tools.put(gen, list)
			}
			return err
		})
	}
	shared := func(m *Manager, ctx context.Context) error {
		_, err := m.Tools(ctx, "argos", nil)
		return err
	}
	for _, bc := range []struct {
		name string
		call func(*Manager, context.Context) error
	}{{"unshared", unshared}, {"shared", shared}} {
		b.Run(bc.name, func(b *testing.B) {
			d := &downstream{release: make(chan struct{}), started: make(chan string, 64), canceled: make(chan string, 64)}
			d.restart(false)
			d.ts = httptest.NewServer(http.HandlerFunc(d.serve))
			defer d.ts.Close()
			m := NewManager([]ServerSpec{d.spec("argos")}, Options{})
			defer m.Close()
			ctx := context.Background()
			if err := bc.call(m, ctx); err != nil {
				b.Fatal(err)
			}
			start := d.count("POST", "tools/list")
			b.ResetTimer()
			for b.Loop() {
				m.Invalidate("argos")
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						if err := bc.call(m, ctx); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(d.count("POST", "tools/list")-start)/float64(b.N), "lists/op")
		})
	}
}

// A cached tool list older than ToolListTTL is answered at once and read
// again in the background: a tool the downstream added without telling
// shows up, and a list that can no longer be read is dropped, so that the
// next caller meets the failure instead of tools that are gone.
func TestToolListRefreshedAfterTTL(t *testing.T) {
	g := newListGate(t)
	m := newManager(t, Options{ToolListTTL: time.Nanosecond}, g.spec("a"))
	ctx := testCtx(t)
	list := func() toolsResult {
		tools, err := m.Tools(ctx, "a", nil)
		return toolsResult{tools, err}
	}
	has := func(tools []mcp.Tool, name string) bool {
		return slices.ContainsFunc(tools, func(tl mcp.Tool) bool { return tl.Name == name })
	}
	first := make(chan toolsResult, 1)
	go func() { first <- list() }()
	g.next(t).pass <- true
	if r := receive(t, "the first list", first); r.err != nil || has(r.tools, "late") {
		t.Fatalf("first list: %v", r.err)
	}
	// The downstream is redeployed with one more tool: nothing tells the
	// gateway (a new process sends no notifications/tools/list_changed on
	// the old sessions; this stateless one takes them as they are).
	s := g.d.newMCPServer()
	s.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	g.d.mcp.Store(s)
	g.d.h.Store(server.NewStreamableHTTPServer(s))
	if r := list(); r.err != nil || has(r.tools, "late") {
		t.Fatalf("a stale list must be answered at once, as cached: %v", r.err)
	}
	g.next(t).pass <- true // the background read
	eventually(t, "the list read again to show the new tool", func() bool { return has(list().tools, "late") })

	g.next(t).pass <- false // the next background read fails
	eventually(t, "the cached list dropped", func() bool { return !cacheWarm(m, "a") })
	failed := make(chan toolsResult, 1)
	go func() { failed <- list() }()
	g.next(t).pass <- false
	if r := receive(t, "the list after the failure", failed); r.err == nil {
		t.Errorf("a list that cannot be read answered %d tools from the cache", len(r.tools))
	}
}
