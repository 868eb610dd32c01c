package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
)

// fakeProvider is an OpenAI-compatible /v1/models that can go down and up.
type fakeProvider struct {
	up     atomic.Bool
	checks atomic.Int64
	srv    *httptest.Server
}

func newFakeProvider(t *testing.T, up bool) *fakeProvider {
	f := &fakeProvider{}
	f.up.Store(up)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.checks.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if !f.up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"down"}}`)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// newTestGateway runs New on cfg (written to a temporary file) and stops the
// gateway when the test ends.
func newTestGateway(t *testing.T, cfg string) *Gateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{ConfigPath: path, Logger: zap.NewNop(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Shutdown)
	return g
}

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

func shortProviderChecks(t *testing.T, every, retry, gap time.Duration) {
	saved := providerChecks
	providerChecks.every, providerChecks.retryMin, providerChecks.kickedGap = every, retry, gap
	t.Cleanup(func() { providerChecks = saved })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)

		}
		time.Sleep(10 * time.Millisecond)
	}
}

func providerCfg(baseURL string) string {
	return `
name: t
listen: "127.0.0.1:0"
models:
  default: openai.m
  providers:
    openai: {base_url: "` + baseURL + `/v1", api_key: k, max_retries: 0}
agents:
  a: {}
`
}

// Providers are checked again after start: a provider down at start is
// seen up later (with backoff), and one that dies is seen down, in
// pallasgw_llm_provider_up and in the agents' health.
func TestProviderRechecked(t *testing.T) {
	shortProviderChecks(t, 100*time.Millisecond, 20*time.Millisecond, time.Millisecond)
	f := newFakeProvider(t, false)
	g := newTestGateway(t, providerCfg(f.srv.URL))
	up := func(want float64) func() bool {
		return func() bool { return gaugeValue(g.metrics.ProviderUp.WithLabelValues("openai")) == want }
	}
	health := func(want string) func() bool {
		return func() bool {
			s := g.current.Load()
			return s.agents.Get("a").Health(context.Background(), nil).Status == want
		}
	}
	<-g.current.Load().preflight.done
	waitFor(t, "provider down at start", up(0))
	waitFor(t, "agent not ok while the provider is down", func() bool { return !health("ok")() })
	f.up.Store(true)
	waitFor(t, "provider up once it answers", up(1))
	waitFor(t, "agent ok once the provider answers", health("ok"))
	f.up.Store(false)
	waitFor(t, "provider down once it dies", up(0))
	waitFor(t, "agent not ok once the provider dies", func() bool { return !health("ok")() })
}

// A real call that disagrees with the last check has the provider checked
// again at once, long before the next periodic check.
func TestProviderRecheckedAfterRealFailure(t *testing.T) {
	shortProviderChecks(t, time.Hour, time.Hour, time.Millisecond)
	f := newFakeProvider(t, true)
	g := newTestGateway(t, providerCfg(f.srv.URL))
	up := func() float64 { return gaugeValue(g.metrics.ProviderUp.WithLabelValues("openai")) }
	s := g.current.Load()
	<-s.preflight.done
	if up() != 1 {
		t.Fatalf("provider not up at start: %v", s.preflight.result("openai"))
	}
	s.preflight.observed("openai", nil) // agrees: no check
	time.Sleep(20 * time.Millisecond)
	if n := f.checks.Load(); n != 1 {
		t.Fatalf("%d checks after an agreeing call, want 1", n)
	}
	f.up.Store(false)
	s.preflight.observed("openai", errors.New("HTTP 503"))
	waitFor(t, "provider down after a failed real call", func() bool { return up() == 0 })
	if err := s.preflight.result("openai"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("result %v", err)
	}
	f.up.Store(true)
	s.preflight.observed("openai", nil)
	waitFor(t, "provider up after a successful real call", func() bool { return up() == 1 })
}
