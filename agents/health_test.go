package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
)

// bearerDown is a downstream whose server "private" answers only the bearer
// "good" (401 otherwise, as a downstream behind its own auth does); "public"
// answers anyone. It counts the probes per server.
type bearerDown struct {
	*agenttest.FakeDown
	mu     sync.Mutex
	probes map[string]int
}

func (d *bearerDown) Probe(_ context.Context, server string, hdr http.Header) error {
	d.mu.Lock()
	d.probes[server]++
	d.mu.Unlock()
	if server == "private" && hdr.Get("Authorization") != "Bearer good" {
		return fmt.Errorf("HTTP 401 Unauthorized")
	}
	return nil
}

func (d *bearerDown) count(server string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.probes[server]
}

// get_health of an agent whose downstream takes the caller's credentials is
// the caller's: cached per outbound credential set, never shown to another
// caller; the background probe (no caller) leaves that server out, says so,
// and is what pallasgw_agent_health shows, so callers cannot move it.
func TestHealthPerCredentials(t *testing.T) {
	down := &bearerDown{FakeDown: &agenttest.FakeDown{}, probes: map[string]int{}}
	ta := agenttest.New(t, `
name: unit
mcp:
  servers:
    private: {url: "http://127.0.0.1:1/mcp", forward_inbound_auth: true}
    public: {url: "http://127.0.0.1:1/mcp"}
agents:
  talk: {model: passthrough, servers: [private, public]}
  pipe: {kind: chain, sequence: [talk]}
`, down)
	ctx := context.Background()
	talk, pipe := ta.Set.Get("talk"), ta.Set.Get("pipe")
	gauge := func() float64 { return agenttest.GaugeValue(ta.Metrics.AgentHealth.WithLabelValues("talk")) }
	bearer := func(tok string) http.Header {
		h := http.Header{"Accept": {"application/json"}}
		if tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
		return h
	}

	bg := talk.Health(ctx, nil)
	if bg.Status != "ok" || !strings.Contains(bg.Message, "private not probed without a caller") || down.count("private") != 0 {
		t.Fatalf("background health %+v after %d probes of private; want ok, private not probed", bg, down.count("private"))
	}
	if gauge() != 1 {
		t.Fatalf("pallasgw_agent_health %v after the background probe, want 1", gauge())
	}

	cases := []struct{ name, token, status string }{
		{"valid bearer", "good", "ok"},
		{"another caller's bad bearer", "bad", "degraded"},
		{"the valid bearer again, not the bad one's result", "good", "ok"},
		{"no bearer, not the valid one's result", "", "degraded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, a := range []*agents.Agent{talk, pipe} {
				h := a.Health(ctx, bearer(c.token))
				if h.Status != c.status {
					t.Errorf("%s: %+v, want %s", a.Name, h, c.status)
				}
				if c.status == "degraded" && !strings.Contains(h.Message, "401") {
					t.Errorf("%s: message %q does not say why", a.Name, h.Message)
				}
			}
		})
	}
	if n := down.count("private"); n != 3 {
		t.Errorf("private probed %d times, want 3 (one per credential set, then cached)", n)
	}
	if gauge() != 1 {
		t.Errorf("pallasgw_agent_health moved to %v with callers' results, want 1", gauge())
	}

	// Through get_health, with the caller's headers.
	x := ta.Send(t, "talk", agenttest.SendBody("1", "get_health", `{}`, ""), map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer bad"})
	if !strings.Contains(x.Body, `degraded`) || !strings.Contains(x.Body, "401") {
		t.Errorf("get_health with a bad bearer answered %s", x)
	}

	// The cache is bounded, however many credential sets ask.
	for i := range agents.MaxHealthEntries + 50 {
		talk.Health(ctx, bearer(fmt.Sprintf("t%d", i)))
	}
	if n := agents.HealthEntries(talk); n > agents.MaxHealthEntries {
		t.Errorf("%d cached health results, bound %d", n, agents.MaxHealthEntries)
	}
	b, _ := json.Marshal(talk.Health(ctx, nil))
	if !strings.Contains(string(b), `"status":"ok"`) {
		t.Errorf("background health after many callers: %s", b)
	}
}

// get_health is announced as what it is: read-only and idempotent, for
// every kind of agent.
func TestHealthAnnotations(t *testing.T) {
	ta := agenttest.New(t, agenttest.ProxyTwoServers+"  talk: {model: passthrough}\n  box: {kind: toolbox, servers: [a]}\n", agenttest.TwoServersDown())
	for _, agent := range []string{"talk", "px", "box"} {
		cs := ta.Session(t, agent, "bob", "", nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range res.Tools {
			if tool.Name != "get_health" {
				continue
			}
			found = true
			if a := tool.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
				t.Errorf("%s: get_health annotations %+v, want readOnlyHint and idempotentHint", agent, a)
			}
		}
		if !found {
			t.Errorf("%s lists no get_health", agent)
		}
	}
}
