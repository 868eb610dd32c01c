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
)

// Health is the get_health answer of seeds/001 §3.
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
	a.observe(callerOf(ctx), "get_health", "ok", start)
	b, _ := json.Marshal(h)
	return mcp.NewToolResultText(string(b)), nil
}

// Health probes the agent's dependencies (cached for healthTTL). It never
// calls an LLM.
func (a *Agent) Health(ctx context.Context, inbound http.Header) Health {
	a.health.mu.Lock()
	defer a.health.mu.Unlock()
	if !a.health.at.IsZero() && time.Since(a.health.at) < healthTTL {
		return a.health.result
	}
	h := a.probe(ctx, inbound)
	if ctx.Err() != nil {
		// The caller went away mid-probe: its failures say nothing about
		// the dependencies, so neither cache them nor publish them.
		return h
	}
	a.health.at, a.health.result = time.Now(), h
	a.set.deps.Metrics.AgentHealth.WithLabelValues(a.Name).Set(healthValue[h.Status])
	return h
}

// ExpireHealth forgets every agent's cached health, so the next probe
// looks again (a provider's check result changed).
func (s *Set) ExpireHealth() {
	for _, a := range s.agents {
		a.health.mu.Lock()
		a.health.at = time.Time{}
		a.health.mu.Unlock()
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.recoverCall(RequestID(ctx), "the probe of server "+srv, func(err error) { add(finding{statusDegraded, err.Error()}) })
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			hdr, err := a.set.outbound(pctx, srv, inbound)
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
	return summarize(findings)
}

// providerFinding reports the agent's model provider's preflight result: a
// rejected key means the agent cannot think (error); anything else degrades.
func (a *Agent) providerFinding() *finding {
	if a.Config.Model == "" || a.set.deps.Preflight == nil {
		return nil
	}
	prov, _ := config.SplitModel(a.Config.Model)
	err := a.set.deps.Preflight(prov)
	if err == nil {
		return nil
	}
	var he *llm.HTTPError
	if errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden) {
		return &finding{statusError, fmt.Sprintf("LLM provider %s rejected the API key (HTTP %d)", prov, he.Status)}
	}
	return &finding{statusDegraded, fmt.Sprintf("LLM provider %s preflight failed: %v", prov, err)}
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
