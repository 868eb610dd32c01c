//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/pallasgw/pallasgw/metrics"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

const metricsConfig = `
name: e2e-metrics
listen: "127.0.0.1:{{PORT}}"
models:
  default: openai.fake-model
  providers:
    openai:
      base_url: {{LLM}}
      api_key: e2e-key
  prices:
    openai.fake-model: {input: 1.5, output: 6}
mcp:
  servers:
    everything:
      transport: http
      url: {{EVERYTHING}}
      timeout: 30s
      forward_headers: {X-Tenant: X-Tenant-ID}
agents:
  worker:
    servers: [everything]
    tools: {allow: ["everything__echo", "everything__trigger-long-running-operation"]}
  limited:
    servers: [everything]
    tools: {allow: ["everything__echo"]}
    max_iterations: 1
`

// tenantHeader is an inbound header that forward_headers maps downstream;
// its value is over the 8 KiB limit, so the gateway drops and counts it.
type tenantHeader struct{ value string }

func (h tenantHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Tenant", h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// driveTraffic makes the calls after which every metric family of metrics.Names
// has a series: a tool loop with a downstream call, usage and prices, a
// malformed history entry, an oversized forwarded header, a run that hits
// max_iterations, and get_health.
func driveTraffic(t *testing.T, gw *gateway, llm *fakellm.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(agent string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e-metrics", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{
			Endpoint:   gw.Base + "/agents/" + agent + "/mcp",
			HTTPClient: &http.Client{Transport: tenantHeader{strings.Repeat("t", 9000)}},
			MaxRetries: -1,
		}
		cs, err := c.Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", agent, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	echo := fakellm.ToolCalls(fakellm.Call{Name: "everything__echo", Args: json.RawMessage(`{"message":"ping"}`)})
	llm.Script(echo.Usage(12, 3), fakellm.Text("pong").Usage(20, 4), echo)

	worker := connect("worker")
	res, err := worker.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{
		"message": "echo ping",
		"history": []any{map[string]any{"role": "system", "content": "not a valid role"}},
	}})
	if err != nil || res.IsError {
		t.Fatalf("worker send_message: %v %+v", err, res)
	}
	limited := connect("limited")
	if res, err := limited.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "loop"}}); err != nil || res.IsError {
		t.Fatalf("limited send_message: %v %+v", err, res)
	}
	if res, err := worker.CallTool(ctx, &mcp.CallToolParams{Name: "get_health", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("get_health: %v %+v", err, res)
	}
}

// metricFamilies returns the families with a # TYPE line in an exposition.
func metricFamilies(exposition string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(exposition, -1) {
		out[m[1]] = true
	}
	return out
}

// TestPrometheus scrapes the gateway with the real Prometheus using the
// shipped scrape config and alert rules, and lints the exposition with
// promtool.
func TestPrometheus(t *testing.T) {
	prometheus := tool(t, "prometheus")
	promtool := tool(t, "promtool")
	everything := startEverything(t)
	llm := fakellm.New(t)
	gw := startGateway(t, strings.NewReplacer("{{LLM}}", llm.OpenAIBaseURL(), "{{EVERYTHING}}", everything).Replace(metricsConfig))

	t.Run("shipped rules and config pass promtool", func(t *testing.T) {
		for _, args := range [][]string{
			{"check", "rules", filepath.Join(repoDir, "configs/prometheus/alerts.yml")},
			{"check", "config", filepath.Join(repoDir, "configs/prometheus/prometheus.yml")},
		} {
			if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})

	t.Run("alert rules fire on their conditions", func(t *testing.T) {
		testAlertRules(t, promtool)
	})

	// Before any traffic: the families that exist from the start.
	_, _, idle := mustGet(t, gw.Base+"/metrics", nil)
	driveTraffic(t, gw, llm)
	_, _, busy := mustGet(t, gw.Base+"/metrics", nil)

	t.Run("metrics pass promtool check metrics", func(t *testing.T) {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(busy)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	t.Run("every metric of metrics.Names is exported", func(t *testing.T) {
		before, after := metricFamilies(idle), metricFamilies(busy)
		var lazy, missing []string
		for _, n := range metrics.Names {
			switch {
			case !after[n]:
				missing = append(missing, n)
			case !before[n]:
				lazy = append(lazy, n)
			}
		}
		t.Logf("families that appear only after traffic (no series before their first label set): %s", strings.Join(lazy, ", "))
		if len(missing) > 0 {
			t.Errorf("never exported, even after traffic: %s", strings.Join(missing, ", "))
		}
	})

	t.Run("inflight counts a running call once", func(t *testing.T) {
		checkInflight(t, gw, llm)
	})

	t.Run("prometheus scrapes the gateway with the shipped config", func(t *testing.T) {
		scrapeWithPrometheus(t, prometheus, promtool, gw)
	})
}

// scrapeWithPrometheus runs Prometheus on the shipped prometheus.yml (target
// and intervals adapted) and the shipped rules, and waits until the gateway
// is up, its metrics are stored and every rule evaluates cleanly.
func scrapeWithPrometheus(t *testing.T, prometheus, promtool string, gw *gateway) {
	dir := t.TempDir()
	rules := writeFile(t, dir, "alerts.yml", readRepoFile(t, "configs/prometheus/alerts.yml"))
	cfg := substitute(t, "configs/prometheus/prometheus.yml", readRepoFile(t, "configs/prometheus/prometheus.yml"),
		`"127\.0\.0\.1:8200"`, fmt.Sprintf(`"127.0.0.1:%d"`, gw.Port),
		`(?m)^(\s*)scrape_interval: 15s`, "${1}scrape_interval: 1s",
		`(?m)^(\s*)evaluation_interval: 15s`, "${1}evaluation_interval: 1s",
		`(?m)^(\s*)- alerts\.yml`, "${1}- "+rules,
	)
	conf := writeFile(t, dir, "prometheus.yml", cfg)
	if out, err := exec.Command(promtool, "check", "config", conf).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config (adapted): %v\n%s", err, out)
	}
	port := freePorts(t, 1)[0]
	api := fmt.Sprintf("http://127.0.0.1:%d/api/v1", port)
	p := startProc(t, "prometheus", exec.Command(prometheus,
		"--config.file="+conf,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+fmt.Sprintf("127.0.0.1:%d", port),
	))

	query := func(q string) ([]struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
	}, error) {
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		code, _, body, err := get(api+"/query?query="+url.QueryEscape(q), nil)
		if err != nil {
			return nil, err
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Status != "success" {
			return nil, fmt.Errorf("query %s: %d %s", q, code, body)
		}
		return r.Data.Result, nil
	}

	waitFor(t, `up{job="pallasgw"} == 1`, 60*time.Second, p, func() error {
		res, err := query(`up{job="pallasgw"}`)
		if err != nil {
			return err
		}
		if len(res) != 1 || len(res[0].Value) != 2 || res[0].Value[1] != "1" {
			return fmt.Errorf("up{job=\"pallasgw\"} = %v", res)
		}
		return nil
	})

	waitFor(t, "the gateway's metric families in Prometheus", 30*time.Second, p, func() error {
		var r struct {
			Data []string `json:"data"`
		}
		code, _, body, err := get(api+"/label/__name__/values", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
			return fmt.Errorf("%d %s", code, body)
		}
		have := map[string]bool{}
		for _, n := range r.Data {
			have[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] = true
		}
		var missing []string
		for _, n := range metrics.Names {
			if !have[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not stored yet: %s", strings.Join(missing, ", "))
		}
		return nil
	})

	waitFor(t, "every alert rule evaluated without error", 30*time.Second, p, func() error {
		var r struct {
			Data struct {
				Groups []struct {
					Rules []struct {
						Name           string `json:"name"`
						Health         string `json:"health"`
						LastError      string `json:"lastError"`
						LastEvaluation string `json:"lastEvaluation"`
					} `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		code, _, body, err := get(api+"/rules", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
			return fmt.Errorf("%d %s", code, body)
		}
		n := 0
		for _, g := range r.Data.Groups {
			for _, rule := range g.Rules {
				n++
				if rule.Health != "ok" {
					return fmt.Errorf("rule %s: health %q %s", rule.Name, rule.Health, rule.LastError)
				}
			}
		}
		if n == 0 {
			return fmt.Errorf("no rules loaded")
		}
		return nil
	})

	// The gateway loaded its config and reports it: the reload alert's
	// input is 1, so the alert stays quiet.
	res, err := query(`pallasgw_config_last_reload_successful{job="pallasgw"}`)
	if err != nil || len(res) != 1 || res[0].Value[1] != "1" {
		t.Errorf("pallasgw_config_last_reload_successful in Prometheus: %v %v", res, err)
	}
}

// alertCase is one promtool rule unit test: input series, and the alerts
// (by name) expected at eval_time, with their labels.
type alertCase struct {
	alert  string
	series map[string]string // series -> values (1m interval)
	at     string
	want   []map[string]string
}

// testAlertRules runs `promtool test rules` on the shipped alerts.yml
// (annotations stripped, as they are prose) with synthetic series for each
// alert, firing and quiet.
func testAlertRules(t *testing.T, promtool string) {
	dir := t.TempDir()
	var rules map[string]any
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "configs/prometheus/alerts.yml")), &rules); err != nil {
		t.Fatal(err)
	}
	for _, g := range rules["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
		}
	}
	b, _ := yaml.Marshal(rules)
	rulesFile := writeFile(t, dir, "alerts.yml", string(b))

	gw := `instance="gw:8200",job="pallasgw"`
	cases := []alertCase{
		{alert: "PallasgwDown", series: map[string]string{`up{` + gw + `}`: "0x10"}, at: "6m",
			want: []map[string]string{{"severity": "critical", "instance": "gw:8200", "job": "pallasgw"}}},
		{alert: "PallasgwConfigReloadFailed", series: map[string]string{`pallasgw_config_last_reload_successful{` + gw + `}`: "1 1 0x10"}, at: "10m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "job": "pallasgw"}}},
		// Failed for 3 minutes only: not yet.
		{alert: "PallasgwConfigReloadFailed", series: map[string]string{`pallasgw_config_last_reload_successful{` + gw + `}`: "1 1 0x10"}, at: "5m"},
		{alert: "PallasgwAgentDegraded", series: map[string]string{
			`pallasgw_agent_health{` + gw + `,agent="a"}`: "0.5x15", `pallasgw_agent_health{` + gw + `,agent="b"}`: "0x15",
			`pallasgw_agent_health{` + gw + `,agent="c"}`: "1x15"}, at: "12m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "job": "pallasgw", "agent": "a"}}},
		{alert: "PallasgwAgentError", series: map[string]string{
			`pallasgw_agent_health{` + gw + `,agent="a"}`: "0.5x15", `pallasgw_agent_health{` + gw + `,agent="b"}`: "0x15"}, at: "12m",
			want: []map[string]string{{"severity": "critical", "instance": "gw:8200", "job": "pallasgw", "agent": "b"}}},
		{alert: "PallasgwToolErrorRateHigh", series: map[string]string{
			`pallasgw_tool_calls_total{` + gw + `,agent="a",tool="send_message",outcome="ok"}`:    "0+60x30",
			`pallasgw_tool_calls_total{` + gw + `,agent="a",tool="send_message",outcome="error"}`: "0+30x30",
			`pallasgw_tool_calls_total{` + gw + `,agent="b",tool="send_message",outcome="ok"}`:    "0+60x30",
			`pallasgw_tool_calls_total{` + gw + `,agent="b",tool="send_message",outcome="error"}`: "0+1x30"}, at: "20m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "agent": "a"}}},
		{alert: "PallasgwHTTPErrorRateHigh", series: map[string]string{
			`pallasgw_http_requests_total{` + gw + `,handler="agent",code="200"}`: "0+60x30",
			`pallasgw_http_requests_total{` + gw + `,handler="agent",code="502"}`: "0+20x30"}, at: "20m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "handler": "agent"}}},
		{alert: "PallasgwDownstreamErrorRateHigh", series: map[string]string{
			`pallasgw_downstream_calls_total{` + gw + `,server="s",outcome="ok"}`:      "0+60x30",
			`pallasgw_downstream_calls_total{` + gw + `,server="s",outcome="timeout"}`: "0+20x30"}, at: "20m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "server": "s"}}},
		{alert: "PallasgwLLMLatencyHigh", series: map[string]string{
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="20.48"}`: "0x40",
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="40.96"}`: "0+1x40",
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="81.92"}`: "0+10x40",
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="+Inf"}`:  "0+10x40"}, at: "30m",
			want: []map[string]string{{"severity": "warning", "gen_ai_provider_name": "openai", "gen_ai_request_model": "m"}}},
		// Fast model: quiet.
		{alert: "PallasgwLLMLatencyHigh", series: map[string]string{
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="1.28"}`: "0+10x40",
			`gen_ai_client_operation_duration_seconds_bucket{` + gw + `,gen_ai_provider_name="openai",gen_ai_request_model="m",le="+Inf"}`: "0+10x40"}, at: "30m"},
		{alert: "PallasgwLLMProviderDown", series: map[string]string{
			`pallasgw_llm_provider_up{` + gw + `,provider="openai"}`: "0x10", `pallasgw_llm_provider_up{` + gw + `,provider="anthropic"}`: "1x10"}, at: "6m",
			want: []map[string]string{{"severity": "critical", "instance": "gw:8200", "job": "pallasgw", "provider": "openai"}}},
		{alert: "PallasgwProgressDropped", series: map[string]string{
			`pallasgw_progress_notifications_total{` + gw + `,outcome="dropped"}`: "0+1x20"}, at: "15m",
			want: []map[string]string{{"severity": "warning", "instance": "gw:8200", "job": "pallasgw", "outcome": "dropped"}}},
	}

	var tests []any
	for _, c := range cases {
		var series []any
		names := make([]string, 0, len(c.series))
		for s := range c.series {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			series = append(series, map[string]any{"series": s, "values": c.series[s]})
		}
		exp := []any{}
		for _, labels := range c.want {
			exp = append(exp, map[string]any{"exp_labels": labels})
		}
		tests = append(tests, map[string]any{
			"interval":     "1m",
			"input_series": series,
			"alert_rule_test": []any{map[string]any{
				"eval_time": c.at, "alertname": c.alert, "exp_alerts": exp,
			}},
		})
	}
	b, err := yaml.Marshal(map[string]any{"rule_files": []string{rulesFile}, "evaluation_interval": "1m", "tests": tests})
	if err != nil {
		t.Fatal(err)
	}
	testFile := writeFile(t, dir, "alerts_test.yml", string(b))
	cmd := exec.Command(promtool, "test", "rules", testFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out.String())
	}
	// Every shipped alert has a case.
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.alert] = true
	}
	for _, g := range rules["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if name, _ := r.(map[string]any)["alert"].(string); name != "" && !covered[name] {
				t.Errorf("alert %s has no promtool test case here", name)
			}
		}
	}
}

// checkInflight scrapes /metrics while one slow call runs: the dashboard's
// in-flight panel and capacity planning read pallasgw_inflight_requests.
func checkInflight(t *testing.T, gw *gateway, llm *fakellm.Server) {
	llm.Script(
		fakellm.ToolCalls(fakellm.Call{Name: "everything__trigger-long-running-operation", Args: json.RawMessage(`{"duration":2,"steps":2}`)}),
		fakellm.Text("done"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The downstream tool's "started" notification says the call is deep
	// inside the agent (past every layer that might count it).
	started := make(chan struct{})
	var once sync.Once
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-inflight", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if strings.HasSuffix(r.Params.Message, "trigger-long-running-operation: started") {
				once.Do(func() { close(started) })
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.Base + "/agents/worker/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "slow"}}
		params.SetProgressToken("inflight")
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the slow call ended before its tool started: %v", err)
	case <-ctx.Done():
		t.Fatal("the slow call's tool never started")
	}
	_, _, body := mustGet(t, gw.Base+"/metrics", nil)
	m := regexp.MustCompile(`(?m)^pallasgw_inflight_requests\{agent="worker"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil || m[1] != "1" {
		t.Errorf("one running call shows as pallasgw_inflight_requests{agent=\"worker\"} %v, want 1", m)
	}
	if err := <-done; err != nil {
		t.Fatalf("slow call: %v", err)
	}
}
