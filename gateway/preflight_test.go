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

	"github.com/pallasgw/pallasgw/agents"
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
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() }) // a test has no load balancer to drain from
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

// waitFor polls cond until it holds, or until shortly before the test
// binary's own deadline (go test -timeout): a loaded machine makes the
// test slower, never failing.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Hour)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-10 * time.Second)
	}
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

// closedURL is the URL of a server that is no longer listening.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// A provider no agent uses is checked too (that it answers), not reported
// up unseen: pallasgw_llm_provider_up is 0 for an unreachable one and 1 for
// one that answered.
func TestUnusedProviderChecked(t *testing.T) {
	used, spare := newFakeProvider(t, true), newFakeProvider(t, true)
	g := newTestGateway(t, `
name: t
listen: "127.0.0.1:0"
models:
  default: openai.m
  providers:
    openai: {base_url: "`+used.srv.URL+`/v1", api_key: k, max_retries: 0}
    spare: {type: openai, base_url: "`+spare.srv.URL+`/v1", api_key: k, max_retries: 0}
    gone: {type: anthropic, base_url: "`+closedURL(t)+`", api_key: k, max_retries: 0}
agents:
  a: {}
`)
	<-g.current.Load().preflight.done
	for name, want := range map[string]float64{"openai": 1, "spare": 1, "gone": 0} {
		if got := gaugeValue(g.metrics.ProviderUp.WithLabelValues(name)); got != want {
			t.Errorf("pallasgw_llm_provider_up{provider=%q} = %v, want %v", name, got, want)
		}
	}
	if spare.checks.Load() == 0 {
		t.Error("the unused provider was never asked")
	}
}

// An agent whose provider cannot be reached cannot process any request: its
// health is error (not degraded), and the message names the provider and
// the cause.
func TestUnreachableProviderIsError(t *testing.T) {
	g := newTestGateway(t, providerCfg(closedURL(t)))
	s := g.current.Load()
	<-s.preflight.done
	h := s.agents.Get("a").Health(context.Background(), nil)
	if h.Status != "error" || !strings.Contains(h.Message, "cannot process requests") ||
		!strings.Contains(h.Message, "openai") || !strings.Contains(h.Message, "unreachable") || !strings.Contains(h.Message, "refused") {
		t.Errorf("health %+v, want error naming the provider and why", h)
	}
	if v := gaugeValue(g.metrics.AgentHealth.WithLabelValues("a")); v != 0 {
		t.Errorf("pallasgw_agent_health = %v, want 0", v)
	}
}

// models.default naming a model no agent uses is not checked against the
// provider: no warning, the provider is up.
func TestUnusedDefaultModelNotChecked(t *testing.T) {
	f := newFakeProvider(t, true) // lists model "m" only
	g := newTestGateway(t, `
name: t
listen: "127.0.0.1:0"
models:
  default: openai.not-listed
  providers:
    openai: {base_url: "`+f.srv.URL+`/v1", api_key: k, max_retries: 0}
agents:
  a: {model: openai.m}
  p: {model: passthrough}
`)
	<-g.current.Load().preflight.done
	if got := gaugeValue(g.metrics.ProviderUp.WithLabelValues("openai")); got != 1 {
		t.Errorf("pallasgw_llm_provider_up{provider=openai} = %v, want 1 (only the agents' models are checked)", got)
	}
}

// A provider's check and its real calls, as get_health and
// pallasgw_llm_provider_up report them: a model the provider's /models
// omits (a llama.cpp alias) is a warning, not an error, and the provider
// is up; a check refused (401 on /models) is an error until a real call
// answers, then the provider is up and the agent degraded.
func TestProviderCheckAgainstRealCalls(t *testing.T) {
	shortProviderChecks(t, time.Hour, time.Hour, time.Hour)
	cases := []struct {
		name             string
		models           []string // what /v1/models lists
		refuseList       bool     // /v1/models answers 401, chat answers
		before, after    string   // health before and after a real call answers
		upBefore, upNext float64
		msg              string
	}{
		{name: "model not listed", models: []string{"other"}, before: "degraded", after: "degraded", upBefore: 1, upNext: 1, msg: "not listed"},
		{name: "check refused, calls answer", models: []string{"m"}, refuseList: true, before: "error", after: "degraded", upBefore: 0, upNext: 1,
			msg: "answered calls since"},
		{name: "all well", models: []string{"m"}, before: "ok", after: "ok", upBefore: 1, upNext: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.URL.Path == "/v1/models" && tc.refuseList:
					w.WriteHeader(http.StatusUnauthorized)
					fmt.Fprint(w, `{"error":{"message":"no listing for you"}}`)
				case r.URL.Path == "/v1/models":
					fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, tc.models[0])
				default:
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
				}
			}))
			t.Cleanup(srv.Close)
			g := newTestGateway(t, providerCfg(srv.URL))
			s := g.current.Load()
			<-s.preflight.done
			up := func() float64 { return gaugeValue(g.metrics.ProviderUp.WithLabelValues("openai")) }
			a := s.agents.Get("a")
			h := a.Health(context.Background(), nil)
			if h.Status != tc.before || up() != tc.upBefore || tc.before != "ok" && tc.before == tc.after && !strings.Contains(h.Message, tc.msg) {
				t.Fatalf("before a call: health %+v, provider up %v; want %s, up %v", h, up(), tc.before, tc.upBefore)
			}
			if _, err := a.Run(context.Background(), &agents.Call{Turn: agents.Turn{Message: "hello"}}); err != nil {
				t.Fatalf("send_message: %v", err)
			}
			s.agents.ExpireHealth()
			h = a.Health(context.Background(), nil)
			if h.Status != tc.after || up() != tc.upNext || tc.msg != "" && !strings.Contains(h.Message, tc.msg) {
				t.Fatalf("after a call answered: health %+v, provider up %v; want %s with %q, up %v", h, up(), tc.after, tc.msg, tc.upNext)
			}
		})
	}
}

// result is the last preflight error of a provider (nil: ok or not run).
func (p *preflight) result(provider string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results[provider]
}
