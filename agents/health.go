package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

// Health is the get_health answer: status, timestamp, an optional message.
type Health struct {
	Status    string `json:"status"` // ok | degraded | error
	Timestamp string `json:"timestamp"`
	Message   string `json:"message,omitempty"`
}

const (
	statusOK       = "ok"
	statusDegraded = "degraded"
	statusError    = "error"
	probeTimeout   = 3 * time.Second
)

var healthValue = map[string]float64{statusOK: 1, statusDegraded: 0.5, statusError: 0}

func (a *Agent) handleHealth(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	h := a.Health(ctx, req.Header)
	a.observe(policy.CallerFrom(ctx), "get_health", "ok", start)
	b, _ := json.Marshal(h)
	return mcp.NewToolResultText(string(b)), nil
}

// Health probes the agent's dependencies (cached for healthTTL per
// outbound credential set, healthKey). It never calls an LLM. inbound nil is
// the background probe: it has no caller, so servers that take the caller's
// credentials are reported "not probed without a caller" rather than
// probed without them. Only results that depend on no caller set
// pallasgw_agent_health, so one caller's refused credentials cannot move
// the gauge.
func (a *Agent) Health(ctx context.Context, inbound http.Header) Health {
	key := a.healthKey(inbound)
	e := a.health.entry(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.at.IsZero() && time.Since(e.at) < healthTTL {
		return e.result
	}
	h := a.probe(ctx, inbound)
	if ctx.Err() != nil {
		// The caller went away mid-probe: its failures say nothing about
		// the dependencies, so neither cache them nor publish them.
		return h
	}
	e.at, e.result = time.Now(), h
	e.stamp.Store(e.at.UnixNano())
	if key == backgroundKey {
		a.set.deps.Metrics.AgentHealth.WithLabelValues(a.Name).Set(healthValue[h.Status])
	}
	return h
}

// ExpireHealth forgets every agent's cached health, so the next probe
// looks again (a provider's check result changed).
func (s *Set) ExpireHealth() {
	for _, a := range s.agents {
		a.health.expire()
	}
}

// finding is one dependency's problem and how bad it is.
type finding struct {
	status, msg string
}

func (a *Agent) probe(ctx context.Context, inbound http.Header) Health {
	var (
		mu       sync.Mutex
		findings []finding
		wg       sync.WaitGroup
	)
	add := func(f finding) { mu.Lock(); findings = append(findings, f); mu.Unlock() }
	for _, srv := range a.Config.Servers {
		if inbound == nil && a.set.takesCaller(srv) {
			add(finding{statusOK, fmt.Sprintf("MCP server %s not probed without a caller (it takes the caller's credentials)", srv)})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.recoverCall(RequestID(ctx), "the probe of server "+srv, func(err error) { add(finding{statusDegraded, err.Error()}) })
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			hdr, err := a.set.outbound(pctx, srv, inbound, nil)
			var cr *ConnectRequired
			if errors.As(err, &cr) {
				// Not a failure of the server: this caller has not
				// connected its account there (its tools are left out).
				add(finding{statusDegraded, fmt.Sprintf("MCP server %s: %v", srv, cr)})
				return
			}
			if err == nil {
				err = a.set.deps.Downstream.Probe(pctx, srv, hdr)
			}
			if err != nil {
				add(finding{statusDegraded, fmt.Sprintf("MCP server %s unreachable: %s", srv, probeError(err))})
			}
		}()
	}
	for _, sub := range config.Deps(a.Config) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.recoverCall(RequestID(ctx), "the health of agent "+sub, func(err error) { add(finding{statusDegraded, err.Error()}) })
			if h := a.set.Get(sub).Health(ctx, inbound); h.Status != statusOK {
				add(finding{statusDegraded, fmt.Sprintf("agent %s is %s: %s", sub, h.Status, h.Message)})
			}
		}()
	}
	wg.Wait()
	if f := a.providerFinding(); f != nil {
		findings = append(findings, *f)
	}
	if f := a.latencyFinding(); f != nil {
		findings = append(findings, *f)
	}
	return summarize(findings)
}

// providerFinding reports the agent's model provider's check result. Only
// a provider the check cannot reach or authenticate with, and that has
// answered no real call since, fails every call: the agent cannot process
// requests (error). A model the provider's list omits (a llama.cpp alias,
// a LiteLLM wildcard route) may still be served: a warning (degraded), as
// are a check answered with 429 or a 5xx (calls are retried and may get
// through) and a failing check while real calls answer.
func (a *Agent) providerFinding() *finding {
	if a.Config.Model == "" || a.set.deps.Preflight == nil {
		return nil
	}
	prov, _ := config.SplitModel(a.Config.Model)
	st := a.set.deps.Preflight(prov)
	err := st.Check
	if err == nil {
		return nil
	}
	var he *llm.HTTPError
	switch {
	case errors.Is(err, llm.ErrModelNotListed):
		return &finding{statusDegraded, fmt.Sprintf("LLM provider %s: %v (calls may still work: a server may serve a model under a name it does not list)", prov, err)}
	case errors.As(err, &he) && (he.Status == http.StatusTooManyRequests || he.Status >= 500):
		return &finding{statusDegraded, fmt.Sprintf("LLM provider %s answered its check with HTTP %d: %v", prov, he.Status, err)}
	case st.Answered:
		return &finding{statusDegraded, fmt.Sprintf("LLM provider %s failed its check but has answered calls since: %v", prov, err)}
	case errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden):
		return &finding{statusError, fmt.Sprintf("agent cannot process requests: LLM provider %s rejected the API key (HTTP %d)", prov, he.Status)}
	case errors.As(err, &he):
		return &finding{statusError, fmt.Sprintf("agent cannot process requests: LLM provider %s failed its check: %v", prov, err)}
	}
	return &finding{statusError, fmt.Sprintf("agent cannot process requests: LLM provider %s is unreachable: %v", prov, err)}
}

func summarize(findings []finding) Health {
	h := Health{Status: statusOK, Timestamp: time.Now().UTC().Format(time.RFC3339)}
	sort.Slice(findings, func(i, j int) bool { return findings[i].msg < findings[j].msg })
	var msgs []string
	for _, f := range findings {
		msgs = append(msgs, f.msg)
		if f.status == statusError || h.Status == statusOK {
			h.Status = f.status
		}
	}
	h.Message = strings.Join(msgs, "; ")
	return h
}

func probeError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within 3s"
	}
	return err.Error()
}
