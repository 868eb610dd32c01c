// Package metrics owns every Prometheus metric pallasgw exports.
// It is a leaf: it imports no other package of the project. Other packages
// receive a *Metrics and record into it; none of them registers metrics of
// its own. Label values must be bounded: agent, server, tool and provider
// names come from the config, never from a request.
package metrics

import (
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the set of collectors of one gateway process.
type Metrics struct {
	Registry *prometheus.Registry

	BuildInfo *prometheus.GaugeVec

	HTTPRequests *prometheus.CounterVec   // handler, code
	HTTPDuration *prometheus.HistogramVec // handler
	Inflight     *prometheus.GaugeVec     // agent

	ToolCalls        *prometheus.CounterVec   // agent, tool, outcome, caller
	ToolCallDuration *prometheus.HistogramVec // agent, tool

	DownstreamCalls    *prometheus.CounterVec   // server, outcome
	DownstreamDuration *prometheus.HistogramVec // server
	DownstreamSessions *prometheus.GaugeVec     // server
	// DownstreamEvictions counts pooled sessions closed for another (least recently used).
	DownstreamEvictions *prometheus.CounterVec // server

	LLMRequests   *prometheus.CounterVec   // agent, provider, model, outcome
	GenAIDuration *prometheus.HistogramVec // gen_ai_provider_name, gen_ai_request_model
	GenAITokens   *prometheus.HistogramVec // gen_ai_provider_name, gen_ai_request_model, gen_ai_token_type
	LLMTokens     *prometheus.CounterVec   // agent, model, type
	LLMCost       *prometheus.CounterVec   // agent, model
	// SearchEmbeddings counts tool search's embeddings requests (an
	// error: the search answered with its lexical ranking alone).
	SearchEmbeddings *prometheus.CounterVec // agent, provider, model, outcome

	AgentIterations     prometheus.Histogram
	AgentIterationLimit *prometheus.CounterVec // agent
	AgentHealth         *prometheus.GaugeVec   // agent
	ProviderUp          *prometheus.GaugeVec   // provider

	PolicyDecisions          *prometheus.CounterVec // agent, decision, reason, caller
	AuthFailures             *prometheus.CounterVec // reason
	QuotaRejections          *prometheus.CounterVec // caller, reason
	QuotaStoreErrors         *prometheus.CounterVec // op
	TokenExchanges           *prometheus.CounterVec // server, outcome
	UpstreamConnections      *prometheus.GaugeVec   // server, state
	UpstreamRefreshes        *prometheus.CounterVec // server, outcome
	UpstreamConnects         *prometheus.CounterVec // server, outcome
	ForwardedHeaderRejection *prometheus.CounterVec // server, reason

	HistorySkipped *prometheus.CounterVec // agent, reason
	Progress       *prometheus.CounterVec // outcome

	InputRequired          *prometheus.CounterVec // outcome
	InputRequiredParked    prometheus.Gauge
	RequestStateRejections *prometheus.CounterVec // reason
	SessionRejections      *prometheus.CounterVec // reason
	// SessionStoreErrors counts failed operations of the shared session store.
	SessionStoreErrors *prometheus.CounterVec // op
	// DownstreamAdoptions counts downstream sessions taken over from another replica (sessions.store).
	DownstreamAdoptions *prometheus.CounterVec // server

	ToolPinMismatches *prometheus.CounterVec // server
	ToolPinsPending   *prometheus.GaugeVec   // server
	ToolCheckFailures *prometheus.CounterVec // server, check

	ConfigReloads          *prometheus.CounterVec // result
	ConfigLastReloadOK     prometheus.Gauge
	ConfigLastReloadSuccTS prometheus.Gauge
}

// New builds and registers every collector, including the Go runtime and
// process collectors, in a fresh registry.
func New(version string) *Metrics {
	r := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { r.MustRegister(c) }
	m := &Metrics{Registry: r}

	m.BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_build_info", Help: "Build information; the value is always 1.",
	}, []string{"version", "goversion"})
	m.BuildInfo.WithLabelValues(version, runtime.Version()).Set(1)

	m.HTTPRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_http_requests_total", Help: "HTTP requests by handler and status code.",
	}, []string{"handler", "code"})
	m.HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pallasgw_http_request_duration_seconds", Help: "HTTP request duration by handler.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 300},
	}, []string{"handler"})
	m.Inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_inflight_requests", Help: "Requests being served, by agent.",
	}, []string{"agent"})

	m.ToolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_tool_calls_total", Help: "Calls of agents' own tools by outcome (ok, error, denied, timeout, canceled) and caller (named in the config, else other).",
	}, []string{"agent", "tool", "outcome", "caller"})
	m.ToolCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pallasgw_tool_call_duration_seconds", Help: "Duration of agents' own tool calls.",
		Buckets: []float64{.001, .01, .1, .5, 1, 5, 15, 60, 300},
	}, []string{"agent", "tool"})

	m.DownstreamCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_downstream_calls_total", Help: "Calls to downstream MCP servers by outcome.",
	}, []string{"server", "outcome"})
	m.DownstreamDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pallasgw_downstream_call_duration_seconds", Help: "Duration of downstream MCP calls.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60},
	}, []string{"server"})
	m.DownstreamSessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_downstream_sessions", Help: "Open downstream MCP sessions (stdio: processes) by server, pooled and one-shot.",
	}, []string{"server"})
	m.DownstreamEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_downstream_session_evictions_total", Help: "Pooled downstream sessions closed to make room for another (the least recently used idle one), by server.",
	}, []string{"server"})

	m.LLMRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_llm_requests_total", Help: "LLM requests by agent, provider, model and outcome.",
	}, []string{"agent", "provider", "model", "outcome"})
	m.SearchEmbeddings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_tool_search_embedding_requests_total", Help: "Embeddings requests of tool search (tool_search.embeddings) by agent, provider, model and outcome (ok, error: that search ranked lexically alone).",
	}, []string{"agent", "provider", "model", "outcome"})
	m.GenAIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gen_ai_client_operation_duration_seconds", Help: "GenAI operation duration (OpenTelemetry GenAI semantic conventions).",
		Buckets: []float64{.01, .02, .04, .08, .16, .32, .64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92},
	}, []string{"gen_ai_provider_name", "gen_ai_request_model"})
	m.GenAITokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gen_ai_client_token_usage", Help: "Tokens used per GenAI operation (OpenTelemetry GenAI semantic conventions).",
		Buckets: []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304},
	}, []string{"gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type"})
	m.LLMTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_llm_tokens_total", Help: "LLM tokens by agent, model and type (input, output).",
	}, []string{"agent", "model", "type"})
	m.LLMCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_llm_cost_usd_total", Help: "Estimated LLM cost in USD from models.prices.",
	}, []string{"agent", "model"})

	m.AgentIterations = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "pallasgw_agent_iterations", Help: "LLM iterations per agent run.",
		Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32},
	})
	m.AgentIterationLimit = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_agent_iteration_limit_total", Help: "Runs that stopped at max_iterations.",
	}, []string{"agent"})
	m.AgentHealth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_agent_health", Help: "Last known agent health: 1 ok, 0.5 degraded, 0 error.",
	}, []string{"agent"})
	m.ProviderUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_llm_provider_up", Help: "Whether the provider passed its last preflight.",
	}, []string{"provider"})

	m.PolicyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_policy_decisions_total", Help: "Policy decisions by agent, decision, reason and caller (named in the config, else other).",
	}, []string{"agent", "decision", "reason", "caller"})
	m.AuthFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_auth_failures_total", Help: "Inbound requests refused by authentication, by reason (expired, wrong_audience, ...).",
	}, []string{"reason"})
	m.QuotaRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_quota_rejections_total", Help: "Calls refused over a caller's limit, by caller rule and reason (requests_per_minute, tokens_per_day).",
	}, []string{"caller", "reason"})
	m.QuotaStoreErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_quota_store_errors_total", Help: "Failed operations of the quota store (quotas.store), by operation.",
	}, []string{"op"})
	m.TokenExchanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_token_exchanges_total", Help: "RFC 8693 token exchanges for downstream servers, by outcome (ok, cached, error).",
	}, []string{"server", "outcome"})
	m.UpstreamConnections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_upstream_connections", Help: "Callers' own connections to servers with oauth that this replica knows of, by server and state (connected, expired, failed).",
	}, []string{"server", "state"})
	m.UpstreamRefreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_upstream_token_refreshes_total", Help: "Refreshes of callers' upstream tokens, by server and outcome (ok, error).",
	}, []string{"server", "outcome"})
	m.UpstreamConnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_upstream_connects_total", Help: "Connect flows of callers' upstream accounts, by server and outcome (connected, mismatch, denied, error, revoked).",
	}, []string{"server", "outcome"})
	m.ForwardedHeaderRejection = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_forwarded_header_rejections_total", Help: "Forwarded header values dropped by the sanitiser.",
	}, []string{"server", "reason"})

	m.HistorySkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_history_entries_skipped_total", Help: "Malformed history entries skipped.",
	}, []string{"agent", "reason"})
	m.Progress = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_progress_notifications_total", Help: "Progress notifications by outcome (sent, dropped).",
	}, []string{"outcome"})

	m.InputRequired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_input_required_total", Help: "Input-required rounds of 2026-07-28 callers by outcome (asked, resumed, replayed, passed_through, passed_back).",
	}, []string{"outcome"})
	m.InputRequiredParked = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pallasgw_input_required_parked", Help: "Downstream calls waiting for a 2026-07-28 caller's inputResponses.",
	})
	m.RequestStateRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_request_state_rejections_total", Help: "Retries refused for their requestState or inputResponses, by reason.",
	}, []string{"reason"})
	m.SessionRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_session_rejections_total", Help: "Requests answered as for an unknown session, by reason (foreign: sealed for another caller, agent or state key).",
	}, []string{"reason"})
	m.SessionStoreErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_session_store_errors_total", Help: "Failed operations of the shared session store (sessions.store), by operation.",
	}, []string{"op"})
	m.DownstreamAdoptions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_downstream_session_adoptions_total", Help: "Downstream sessions of a caller taken over from another replica through the shared session store, by server.",
	}, []string{"server"})

	m.ConfigReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_config_reloads_total", Help: "Config reloads by result (success, failure, unchanged).",
	}, []string{"result"})
	m.ConfigLastReloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pallasgw_config_last_reload_successful", Help: "Whether the last config reload succeeded.",
	})
	m.ToolPinMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_tool_pin_mismatches_total", Help: "Tool definitions seen that are new or differ from their pin (each distinct definition once), by server.",
	}, []string{"server"})
	m.ToolPinsPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pallasgw_tool_pins_pending", Help: "Tool definitions awaiting a reviewer's approval, by server.",
	}, []string{"server"})
	m.ToolCheckFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pallasgw_tool_check_failures_total", Help: "Tool definitions failing a poisoning check (each distinct definition once), by server and check.",
	}, []string{"server", "check"})

	m.ConfigLastReloadSuccTS = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pallasgw_config_last_reload_success_timestamp_seconds", Help: "Time of the last successful config load.",
	})

	for _, c := range []prometheus.Collector{
		m.BuildInfo, m.HTTPRequests, m.HTTPDuration, m.Inflight, m.ToolCalls, m.ToolCallDuration,
		m.DownstreamCalls, m.DownstreamDuration, m.DownstreamSessions, m.DownstreamEvictions, m.LLMRequests, m.SearchEmbeddings, m.GenAIDuration,
		m.GenAITokens, m.LLMTokens, m.LLMCost, m.AgentIterations, m.AgentIterationLimit, m.AgentHealth,
		m.ProviderUp, m.PolicyDecisions, m.AuthFailures, m.QuotaRejections, m.QuotaStoreErrors, m.TokenExchanges, m.ForwardedHeaderRejection, m.HistorySkipped, m.Progress,
		m.UpstreamConnections, m.UpstreamRefreshes, m.UpstreamConnects,
		m.InputRequired, m.InputRequiredParked, m.RequestStateRejections, m.SessionRejections, m.SessionStoreErrors, m.DownstreamAdoptions,
		m.ToolPinMismatches, m.ToolPinsPending, m.ToolCheckFailures,
		m.ConfigReloads, m.ConfigLastReloadOK, m.ConfigLastReloadSuccTS,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		f(c)
	}
	// Pre-create the reload results so the series exist before the first reload.
	for _, r := range []string{"success", "failure", "unchanged"} {
		m.ConfigReloads.WithLabelValues(r)
	}
	for _, o := range []string{"sent", "dropped"} {
		m.Progress.WithLabelValues(o)
	}
	return m
}

// deleter is what every labelled collector (CounterVec, GaugeVec,
// HistogramVec) offers to delete series.
type deleter interface {
	DeletePartialMatch(prometheus.Labels) int
}

// ForgetAgent deletes every series of an agent that is gone from the
// config, so that nothing (an alert on pallasgw_agent_health) is left
// about an agent that no longer exists.
func (m *Metrics) ForgetAgent(name string) {
	for _, v := range []deleter{m.Inflight, m.ToolCalls, m.ToolCallDuration, m.LLMRequests, m.SearchEmbeddings, m.LLMTokens, m.LLMCost,
		m.AgentIterationLimit, m.AgentHealth, m.PolicyDecisions, m.HistorySkipped} {
		v.DeletePartialMatch(prometheus.Labels{"agent": name})
	}
}

// ForgetServer deletes every series of a downstream server that is gone
// from the config.
func (m *Metrics) ForgetServer(name string) {
	for _, v := range []deleter{m.DownstreamCalls, m.DownstreamDuration, m.DownstreamSessions, m.DownstreamEvictions, m.DownstreamAdoptions, m.TokenExchanges, m.ForwardedHeaderRejection,
		m.ToolPinMismatches, m.ToolPinsPending, m.ToolCheckFailures, m.UpstreamConnections, m.UpstreamRefreshes, m.UpstreamConnects} {
		v.DeletePartialMatch(prometheus.Labels{"server": name})
	}
}

// ForgetProvider deletes the series of an LLM provider that is gone from
// the config.
func (m *Metrics) ForgetProvider(name string) {
	m.ProviderUp.DeletePartialMatch(prometheus.Labels{"provider": name})
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Names lists every metric family name pallasgw exports (for tests).
var Names = []string{
	"pallasgw_build_info", "pallasgw_http_requests_total", "pallasgw_http_request_duration_seconds",
	"pallasgw_inflight_requests", "pallasgw_tool_calls_total", "pallasgw_tool_call_duration_seconds",
	"pallasgw_downstream_calls_total", "pallasgw_downstream_call_duration_seconds",
	"pallasgw_llm_requests_total", "gen_ai_client_operation_duration_seconds", "gen_ai_client_token_usage",
	"pallasgw_llm_tokens_total", "pallasgw_llm_cost_usd_total", "pallasgw_agent_iterations",
	"pallasgw_agent_iteration_limit_total", "pallasgw_agent_health", "pallasgw_llm_provider_up",
	"pallasgw_policy_decisions_total", "pallasgw_forwarded_header_rejections_total",
	"pallasgw_history_entries_skipped_total", "pallasgw_progress_notifications_total",
	"pallasgw_config_reloads_total", "pallasgw_config_last_reload_successful",
	"pallasgw_config_last_reload_success_timestamp_seconds",
}
