package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

func TestToolsAndCall(t *testing.T) {
	d := newDownstream(t, false)
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt}, d.spec("argos"))
	ctx := testCtx(t)

	tools, err := m.Tools(ctx, "argos", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(tools); !strings.Contains(got, "echo") || !strings.Contains(got, "whoami") {
		t.Fatalf("tools = %s", got)
	}
	res, err := m.CallTool(ctx, "argos", "echo", map[string]any{"text": "hi"}, nil, nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "echo:hi" {
		t.Fatalf("result = %q", got)
	}
	if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("argos", "ok")); got != 1 {
		t.Fatalf("downstream calls ok = %v, want 1", got)
	}
	if spec, ok := m.Spec("argos"); !ok || spec.Timeout != DefaultTimeout {
		t.Fatalf("Spec = %+v, %v", spec, ok)
	}
	if _, err := m.Tools(ctx, "nope", nil); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("unknown server: err = %v", err)
	}
}

func TestToolsCacheAndInvalidate(t *testing.T) {
	d := newDownstream(t, false)
	m := newManager(t, Options{}, d.spec("argos"))
	ctx := testCtx(t)

	for range 3 {
		if _, err := m.Tools(ctx, "argos", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.count("POST", "tools/list"); n != 1 {
		t.Fatalf("tools/list sent %d times, want 1 (cached)", n)
	}
	m.Invalidate("argos")
	if _, err := m.Tools(ctx, "argos", nil); err != nil {
		t.Fatal(err)
	}
	if n := d.count("POST", "tools/list"); n != 2 {
		t.Fatalf("tools/list sent %d times after Invalidate, want 2", n)
	}
}

func TestToolsListChangedInvalidates(t *testing.T) {
	d := newDownstream(t, false)
	m := newManager(t, Options{}, d.spec("argos"))
	ctx := testCtx(t)

	if _, err := m.Tools(ctx, "argos", nil); err != nil {
		t.Fatal(err)
	}
	// The downstream broadcasts notifications/tools/list_changed to its
	// sessions; the idle session hears it on its GET stream. A stateful
	// mcp-go server can lose a broadcast to the forwarder of a POST that has
	// just finished (it takes the notification off the session's channel,
	// sees the request done and drops it), so the change is repeated until
	// one arrives. Only an invalidation makes Tools list again.
	changes := 0
	eventually(t, "a new tool in the cached list", func() bool {
		if changes%20 == 0 {
			d.mcp.Load().AddTool(mcp.NewTool(fmt.Sprintf("added-%d", changes)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("added"), nil
			})
		}
		changes++
		tools, err := m.Tools(ctx, "argos", nil)
		return err == nil && strings.Contains(toolNames(tools), "added-")
	})
	if n := d.count("POST", "tools/list"); n != 2 {
		t.Fatalf("tools/list sent %d times, want 2 (one after the change)", n)
	}
}

func TestProgressGoesToItsOwnCall(t *testing.T) {
	d := newDownstream(t, false)
	m := newManager(t, Options{}, d.spec("argos"))
	ctx := testCtx(t)

	var mu sync.Mutex
	got := map[string][]string{}
	record := func(id string) ProgressFunc {
		return func(_ float64, _ *float64, message string) {
			mu.Lock()
			defer mu.Unlock()
			got[id] = append(got[id], message)
		}
	}
	count := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[id])
	}
	var wg sync.WaitGroup
	results := make(map[string]string)
	var resMu sync.Mutex
	for _, id := range []string{"A", "B"} {
		wg.Go(func() {
			res, err := m.CallTool(ctx, "argos", "progress", map[string]any{"id": id}, nil, record(id), CallOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			resMu.Lock()
			results[id] = text(t, res)
			resMu.Unlock()
		})
	}
	// Both calls stay open until progress has arrived for each: a stateful
	// mcp-go downstream may deliver it on either call's stream, or drop one
	// to the forwarder of a POST that just finished.
	eventually(t, "progress notifications for both calls", func() bool { return count("A") > 0 && count("B") > 0 })
	close(d.release)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id, msgs := range got {
		for _, msg := range msgs {
			if msg != id {
				t.Errorf("call %s received progress of call %s", id, msg)
			}
		}
	}
	if results["A"] != "A" || results["B"] != "B" {
		t.Fatalf("results = %v", results)
	}
}

func TestLogMessagesReachTheHook(t *testing.T) {
	d := newDownstream(t, false)
	got := make(chan string, 4)
	m := newManager(t, Options{OnLogMessage: func(server, level, logger string, data any) {
		got <- fmt.Sprintf("%s %s %s %v", server, level, logger, data)
	}}, d.spec("argos"))
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(testCtx(t), "argos", "log", nil, nil, nil, CallOptions{})
		errc <- err
	}()
	if msg := receive(t, "the log message", got); msg != "argos warning tool hello" {
		t.Fatalf("hook got %q", msg)
	}
	close(d.release)
	if err := receive(t, "the call", errc); err != nil {
		t.Fatal(err)
	}
}

func TestHeadersPerFingerprint(t *testing.T) {
	d := newDownstream(t, false)
	log, logs := observed(zap.NewAtomicLevelAt(zap.DebugLevel))
	m := newManager(t, Options{Logger: log}, d.spec("argos"))
	ctx := testCtx(t)
	a := hdr("X-Tenant", "a", "Authorization", "Bearer s3cret-a")
	b := hdr("X-Tenant", "b", "Authorization", "Bearer s3cret-b")

	for _, tc := range []struct {
		name string
		h    map[string][]string
		want string
	}{
		{"first a", a, "a"}, {"b", b, "b"}, {"a again", a, "a"},
		{"a, names in other case", map[string][]string{"x-tenant": {"a"}, "authorization": {"Bearer s3cret-a"}}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.CallTool(ctx, "argos", "whoami", nil, tc.h, nil, CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); got != tc.want {
				t.Fatalf("downstream saw X-Tenant %q, want %q", got, tc.want)
			}
		})
	}
	if got := d.tenants("POST", "initialize"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("initialize per tenant = %v, want one session for a and one for b", got)
	}
	if n := m.servers["argos"].sessionCount(); n != 2 {
		t.Fatalf("pooled sessions = %d, want 2", n)
	}
	for _, s := range d.requests("POST", "") {
		if want := "Bearer s3cret-" + s.header.Get("X-Tenant"); s.header.Get("Authorization") != want {
			t.Fatalf("%s carried Authorization of another tenant", s.rpc)
		}
	}
	_ = m.Close()
	for _, e := range logs.All() {
		if line := e.Message + " " + fmt.Sprint(e.ContextMap()); strings.Contains(line, "s3cret") {
			t.Fatalf("a secret reached the log: %s", line)
		}
	}
}

func TestSessionBound(t *testing.T) {
	d := newDownstream(t, false)
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt, MaxSessionsPerServer: 2}, d.spec("argos"))
	ctx := testCtx(t)
	srv := m.servers["argos"]

	for _, tenant := range []string{"a", "b", "c"} {
		if _, err := m.CallTool(ctx, "argos", "echo", nil, hdr("X-Tenant", tenant), nil, CallOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.sessionCount(); n != 2 {
		t.Fatalf("pooled sessions = %d, want 2", n)
	}
	eventually(t, "the LRU session (a) to be deleted with its headers", func() bool {
		return slices.Equal(d.tenants("DELETE", ""), []string{"a"})
	})
	// The gauge counts a session until its close has ended.
	eventually(t, "the sessions gauge to be 2", func() bool {
		return gaugeValue(t, mt.DownstreamSessions.WithLabelValues("argos")) == 2
	})

	// Both pooled sessions busy: a third tenant gets a one-shot session.
	var wg sync.WaitGroup
	for _, tenant := range []string{"b", "c"} {
		wg.Go(func() {
			_, err := m.CallTool(ctx, "argos", "wait", map[string]any{"id": tenant}, hdr("X-Tenant", tenant), nil, CallOptions{})
			if err != nil {
				t.Error(err)
			}
		})
	}
	receive(t, "first wait call", d.started)
	receive(t, "second wait call", d.started)
	res, err := m.CallTool(ctx, "argos", "whoami", nil, hdr("X-Tenant", "d"), nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "d" {
		t.Fatalf("one-shot session sent X-Tenant %q", got)
	}
	if n := srv.sessionCount(); n != 2 {
		t.Fatalf("pooled sessions = %d after a one-shot call, want 2", n)
	}
	eventually(t, "the one-shot session to be deleted", func() bool {
		return slices.Contains(d.tenants("DELETE", ""), "d")
	})
	close(d.release)
	wg.Wait()
}

func TestIdleExpiry(t *testing.T) {
	d := newDownstream(t, false)
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt, IdleTimeout: 50 * time.Millisecond}, d.spec("argos"))
	if _, err := m.CallTool(testCtx(t), "argos", "echo", nil, hdr("X-Tenant", "a"), nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the idle session to close", func() bool {
		return m.servers["argos"].sessionCount() == 0 &&
			gaugeValue(t, mt.DownstreamSessions.WithLabelValues("argos")) == 0 &&
			slices.Equal(d.tenants("DELETE", ""), []string{"a"})
	})
}

func TestCallTimeout(t *testing.T) {
	d := newDownstream(t, false)
	mt := newMetrics()
	spec := d.spec("argos")
	spec.Timeout = 300 * time.Millisecond
	m := newManager(t, Options{Metrics: mt}, spec)

	_, err := m.CallTool(testCtx(t), "argos", "wait", map[string]any{"id": "slow"}, nil, nil, CallOptions{})
	if got := Outcome(err); got != "timeout" {
		t.Fatalf("Outcome = %q (err %v), want timeout", got, err)
	}
	if id := receive(t, "the downstream handler to see the cancellation", d.canceled); id != "slow" {
		t.Fatalf("canceled %q", id)
	}
	if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("argos", "timeout")); got != 1 {
		t.Fatalf("downstream calls timeout = %v, want 1", got)
	}
}

func TestCallCanceled(t *testing.T) {
	d := newDownstream(t, false)
	m := newManager(t, Options{}, d.spec("argos"))
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "argos", "wait", map[string]any{"id": "c"}, nil, nil, CallOptions{})
		errc <- err
	}()
	receive(t, "the call to start", d.started)
	cancel()
	if got := Outcome(receive(t, "the call to return", errc)); got != "canceled" {
		t.Fatalf("Outcome = %q, want canceled", got)
	}
	if id := receive(t, "the downstream handler to see the cancellation", d.canceled); id != "c" {
		t.Fatalf("canceled %q", id)
	}
}

func TestUnreachable(t *testing.T) {
	m := newManager(t, Options{}, ServerSpec{Name: "gone", URL: freeURL(t), Timeout: 30 * time.Second})
	start := time.Now()
	_, err := m.CallTool(testCtx(t), "gone", "echo", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) || Outcome(err) != "unavailable" {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to report an unreachable server", d)
	}
	if n := m.servers["gone"].sessionCount(); n != 0 {
		t.Fatalf("a failed connect left %d pooled sessions", n)
	}
	if err := m.Probe(testCtx(t), "gone", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Probe err = %v, want ErrUnavailable", err)
	}
}

func TestReconnectAfterRestart(t *testing.T) {
	t.Run("session forgotten", func(t *testing.T) {
		d := newDownstream(t, true)
		m := newManager(t, Options{}, d.spec("argos"))
		ctx := testCtx(t)
		if _, err := m.CallTool(ctx, "argos", "echo", nil, nil, nil, CallOptions{}); err != nil {
			t.Fatal(err)
		}
		d.restart(false) // answers 404 for the old session
		res, err := m.CallTool(ctx, "argos", "echo", map[string]any{"text": "again"}, nil, nil, CallOptions{})
		if err != nil {
			t.Fatalf("call after restart: %v", err)
		}
		if got := text(t, res); got != "echo:again" {
			t.Fatalf("result = %q", got)
		}
		if n := d.count("POST", "initialize"); n != 2 {
			t.Fatalf("initialize sent %d times, want 2", n)
		}
	})
	// With its connections dropped as well, a request already written may
	// fail with EOF: a listing is repeated on a new session, a tools/call is
	// not (it may have run), but the next one uses the new session.
	t.Run("connections dropped", func(t *testing.T) {
		d := newDownstream(t, true)
		m := newManager(t, Options{}, d.spec("argos"))
		ctx := testCtx(t)
		if _, err := m.Tools(ctx, "argos", nil); err != nil {
			t.Fatal(err)
		}
		d.restart(true)
		m.Invalidate("argos")
		if _, err := m.Tools(ctx, "argos", nil); err != nil {
			t.Fatalf("tools/list after restart: %v", err)
		}
		if _, err := m.CallTool(ctx, "argos", "echo", nil, nil, nil, CallOptions{}); err != nil {
			t.Fatalf("call after restart: %v", err)
		}
		if n := d.count("POST", "initialize"); n != 2 {
			t.Fatalf("initialize sent %d times, want 2", n)
		}
	})
}

func TestSessionLostTwiceIsUnavailable(t *testing.T) {
	d := newDownstream(t, true)
	m := newManager(t, Options{}, d.spec("argos"))
	d.reject.Store(true)
	_, err := m.CallTool(testCtx(t), "argos", "echo", nil, nil, nil, CallOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := d.count("POST", "initialize"); n != 2 {
		t.Fatalf("initialize sent %d times, want 2 (one reconnect)", n)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	d, slow := newDownstream(t, false), newDownstream(t, false)
	base := runtime.NumGoroutine()
	m := NewManager([]ServerSpec{
		d.spec("argos"), slow.spec("slow"),
		{Name: "files", Transport: TransportStdio, Command: stdioServerBin},
	}, Options{IdleTimeout: time.Minute})
	ctx := testCtx(t)
	for _, tenant := range []string{"a", "b"} {
		if _, err := m.Tools(ctx, "argos", hdr("X-Tenant", tenant)); err != nil {
			t.Fatal(err)
		}
	}
	close(d.release)
	if _, err := m.CallTool(ctx, "argos", "progress", map[string]any{"id": "p"}, nil, func(float64, *float64, string) {}, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(ctx, "files", "echo", nil, nil, nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Probe(ctx, "argos", nil); err != nil {
		t.Fatal(err)
	}
	inflight := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "slow", "wait", map[string]any{"id": "w"}, nil, nil, CallOptions{})
		inflight <- err
	}()
	receive(t, "the slow call to start", slow.started)

	_ = m.Close()
	if err := receive(t, "the call in flight to end", inflight); Outcome(err) != "unavailable" {
		t.Fatalf("call in flight during Close: err = %v, want unavailable", err)
	}
	if _, err := m.Tools(ctx, "argos", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after Close: err = %v, want ErrUnavailable", err)
	}
	noLeak(t, base)
}

// A downstream that refuses connections is reported once, as net/http says
// it, not with mcp-go's "failed to send request: failed to send request";
// it still counts as unavailable.
func TestRefusedConnectionWording(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	m := newManager(t, Options{}, ServerSpec{Name: "d", Transport: TransportHTTP, URL: srv.URL + "/mcp"})
	_, listErr := m.Tools(testCtx(t), "d", nil)
	_, callErr := m.CallTool(testCtx(t), "d", "x", nil, nil, nil, CallOptions{})
	_, rawErr := m.CallToolRaw(testCtx(t), "d", "x", nil, nil, nil, CallOptions{})
	for what, err := range map[string]error{"tools/list": listErr, "tools/call": callErr, "raw tools/call": rawErr} {
		if err == nil || strings.Count(err.Error(), "failed to send request") > 0 || !strings.Contains(err.Error(), "connection refused") ||
			!errors.Is(err, ErrUnavailable) || Outcome(err) != "unavailable" {
			t.Errorf("%s: %v (outcome %s), want the refused connection said once, unavailable", what, err, Outcome(err))
		}
	}
}
