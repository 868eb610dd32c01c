package agents_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// Providers are named: two OpenAI-compatible servers side by
// side, each with its own static headers and forward_headers; a model
// names its provider.
func TestNamedProviders(t *testing.T) {
	one, two := fakellm.New(t), fakellm.New(t)
	cfg := `
name: unit
models:
  providers:
    local:
      type: openai
      base_url: ` + one.OpenAIBaseURL() + `
      headers: {X-Static: s-local-1234}
      forward_headers: {X-Tenant: X-Org}
    openai:
      base_url: ` + two.OpenAIBaseURL() + `
agents:
  a: {model: local.small}
  b: {model: openai.big}
`
	providers := map[string]llm.Provider{}
	for name, url := range map[string]string{"local": one.OpenAIBaseURL(), "openai": two.OpenAIBaseURL()} {
		p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: url, Headers: map[string]string{"X-Client": name}})
		if err != nil {
			t.Fatal(err)
		}
		providers[name] = p
	}
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, providers)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Tenant": "acme"}
	for _, agent := range []string{"a", "b"} {
		x := ta.Send(t, agent, agenttest.SendBody("1", "send_message", `{"message":"hi"}`, ""), hdr)
		if !strings.Contains(x.Body, "echo: hi") {
			t.Fatalf("%s answered %s", agent, x)
		}
	}
	r1, r2 := one.ChatRequests(), two.ChatRequests()
	if len(r1) != 1 || len(r2) != 1 {
		t.Fatalf("requests: local %d, openai %d; want 1 each", len(r1), len(r2))
	}
	if r1[0].Chat.Model != "small" || r2[0].Chat.Model != "big" {
		t.Errorf("models %q %q", r1[0].Chat.Model, r2[0].Chat.Model)
	}
	h := r1[0].Header
	if h.Get("X-Static") != "s-local-1234" || h.Get("X-Org") != "acme" || h.Get("X-Client") != "local" || h.Get("X-Tenant") != "" {
		t.Errorf("local provider got headers %v", h)
	}
	if h := r2[0].Header; h.Get("X-Org") != "" || h.Get("X-Static") != "" || h.Get("X-Client") != "openai" {
		t.Errorf("openai provider got headers %v", h)
	}
}

// A credential forwarded to an LLM provider (forward_inbound_auth,
// forward_headers) passes the same policy code as a downstream's: a value
// over 8 KiB is dropped and counted under the provider, and the provider
// then gets its own key, never the caller's oversized one.
func TestProviderForwardingSanitised(t *testing.T) {
	fake := fakellm.New(t)
	cfg := `
name: unit
models:
  providers:
    openai:
      base_url: ` + fake.OpenAIBaseURL() + `
      forward_inbound_auth: true
      forward_headers: {X-Tenant: X-Org}
agents:
  a: {model: openai.small}
`
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: fake.OpenAIBaseURL(), APIKey: "own-key-5678"})
	if err != nil {
		t.Fatal(err)
	}
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": p})
	long := strings.Repeat("x", policy.MaxHeaderValueBytes+1)
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + long, "X-Tenant": long}
	if x := ta.Send(t, "a", agenttest.SendBody("1", "send_message", `{"message":"hi"}`, ""), hdr); !strings.Contains(x.Body, "echo: hi") {
		t.Fatalf("answered %s", x)
	}
	reqs := fake.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d chat requests", len(reqs))
	}
	if h := reqs[0].Header; h.Get("Authorization") != "Bearer own-key-5678" || h.Get("X-Org") != "" {
		t.Errorf("provider got Authorization %.40q…, X-Org %.20q…; want its own key and no X-Org", h.Get("Authorization"), h.Get("X-Org"))
	}
	if n := agenttest.CounterValue(ta.Metrics.ForwardedHeaderRejection.WithLabelValues("provider:openai", policy.ReasonTooLong)); n != 2 {
		t.Errorf("pallasgw_forwarded_header_rejections_total{server=provider:openai,reason=too_long} = %v, want 2", n)
	}
}

// Headers toward a provider follow the downstream rules: a bare token
// mapped to Authorization gets "Bearer ", the provider's own
// extra_blocked_headers drop a name, unlisted inbound headers never leave.
func TestProviderForwardedHeaders(t *testing.T) {
	srv := fakellm.New(t)
	cfg := `
name: unit
models:
  providers:
    litellm:
      type: openai
      base_url: ` + srv.OpenAIBaseURL() + `
      headers: {OpenAI-Organization: org-42}
      forward_headers: {X-Maas-Token: Authorization, X-Tenant: X-Tenant-ID, X-Meta: X-Internal-Meta}
      extra_blocked_headers: [X-Internal-*]
agents:
  a: {model: litellm.m}
`
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: srv.OpenAIBaseURL(), Headers: map[string]string{"OpenAI-Organization": "org-42"}})
	if err != nil {
		t.Fatal(err)
	}
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{"litellm": p})
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"X-Maas-Token": "tok-123", "X-Tenant": "acme", "X-Meta": "m", "X-Secret": "s"}
	if x := ta.Send(t, "a", agenttest.SendBody("1", "send_message", `{"message":"hi"}`, ""), hdr); !strings.Contains(x.Body, "echo: hi") {
		t.Fatalf("answer %s", x)
	}
	h := srv.ChatRequests()[0].Header
	if h.Get("Authorization") != "Bearer tok-123" || h.Get("X-Tenant-ID") != "acme" || h.Get("OpenAI-Organization") != "org-42" {
		t.Errorf("provider got %v", h)
	}
	if h.Get("X-Internal-Meta") != "" || h.Get("X-Secret") != "" || h.Get("X-Maas-Token") != "" {
		t.Errorf("blocked or unlisted headers reached the provider: %v", h)
	}
}

// With forward_inbound_auth the caller's bearer is the provider's API key
// and api_key the fallback when the caller sent none (for openai and
// anthropic alike); static headers win over forward_headers.
func TestProviderForwardInboundAuthKeyRule(t *testing.T) {
	for _, kind := range []string{"openai", "anthropic"} {
		t.Run(kind, func(t *testing.T) {
			fake := fakellm.New(t)
			base := fake.OpenAIBaseURL()
			if kind == "anthropic" {
				base = fake.AnthropicBaseURL()
			}
			cfg := `
name: unit
models:
  providers:
    ` + kind + `:
      base_url: ` + base + `
      api_key: own-key-5678
      forward_inbound_auth: true
      headers: {X-Org: static-org}
      forward_headers: {X-Tenant: X-Org, X-Team: X-Team}
agents:
  a: {model: ` + kind + `.m}
`
			pc := llm.ProviderConfig{Kind: kind, BaseURL: base, APIKey: "own-key-5678", Headers: map[string]string{"X-Org": "static-org"}}
			var p llm.Provider
			var err error
			if kind == "anthropic" {
				p, err = llm.NewAnthropic(pc)
			} else {
				p, err = llm.NewOpenAI(pc)
			}
			if err != nil {
				t.Fatal(err)
			}
			ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{kind: p})
			send := func(extra map[string]string) {
				hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
				for k, v := range extra {
					hdr[k] = v
				}
				if x := ta.Send(t, "a", agenttest.SendBody("1", "send_message", `{"message":"hi"}`, ""), hdr); !strings.Contains(x.Body, "echo: hi") {
					t.Fatalf("answered %s", x)
				}
			}
			send(map[string]string{"Authorization": "Bearer caller-key-1234", "X-Tenant": "forwarded-org", "X-Team": "blue"})
			send(nil)
			reqs := fake.ChatRequests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			key := func(h http.Header) string {
				if kind == "anthropic" && h.Get("X-Api-Key") != "" {
					return "x-api-key " + h.Get("X-Api-Key")
				}
				return h.Get("Authorization")
			}
			if got, h := key(reqs[0].Header), reqs[0].Header; got != "Bearer caller-key-1234" || h.Get("X-Api-Key") != "" {
				t.Errorf("the caller's bearer: the provider got %q (x-api-key %q), want the caller's key alone", got, h.Get("X-Api-Key"))
			}
			want := "Bearer own-key-5678"
			if kind == "anthropic" {
				want = "x-api-key own-key-5678"
			}
			if got := key(reqs[1].Header); got != want {
				t.Errorf("no bearer from the caller: the provider got %q, want api_key (%s)", got, want)
			}
			if h := reqs[0].Header; h.Get("X-Org") != "static-org" || h.Get("X-Team") != "blue" {
				t.Errorf("X-Org %q X-Team %q: want the static header over the forwarded one, and the other forwarded", h.Get("X-Org"), h.Get("X-Team"))
			}
		})
	}
}
