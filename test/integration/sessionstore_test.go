package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/gwtest"
)

// roundRobin sends each request to the next of hosts, as a load balancer
// without affinity does.
type roundRobin struct {
	hosts  []string // host:port
	bearer string   // sent as Authorization when set
	n      atomic.Uint64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = rr.hosts[(rr.n.Add(1)-1)%uint64(len(rr.hosts))]
	req.Host = req.URL.Host
	if rr.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+rr.bearer)
	}
	return http.DefaultTransport.RoundTrip(req)
}

func hostOf(t *testing.T, base string) string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// storeConfig is two servers behind one proxy agent: relaydown (log
// messages, elicitation) and siddown (the downstream session's id), with
// the session store at store.
func storeConfig(store, relay, sid string) string {
	return fmt.Sprintf(`
name: shared
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
state_key: %q
sessions: {store: %q}
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef}
    - {name: new, token: new-token-0123456789abcdef}
    - {name: rr, token: rr-token-0123456789abcdef}
mcp:
  servers:
    down: {url: %q, timeout: 30s}
    sid: {url: %q, timeout: 30s}
agents:
  px: {kind: proxy, servers: [down, sid]}
`, stateKeyB64, store, relay, sid)
}

// With sessions.store in Redis, a session-based caller whose requests go
// round-robin to two replicas (no affinity) is served as by one: the log
// level it set through one replica applies to its calls through the other
// (the replicas share its downstream session), and its answer to an
// elicitation that reaches the replica the call does not run on reaches
// the call. Two token callers never share a downstream session, and each
// keeps its own on both replicas.
func TestSessionStoreAcrossReplicas(t *testing.T) {
	rd := gwtest.StartRedis(t)
	relay, sid := newRelayDown(t), newSIDDown(t)
	cfg := storeConfig(rd.URL(), relay.ts.URL, sid)
	a, b := startGateway(t, cfg), startGateway(t, cfg)

	t.Run("session-based caller, round-robin", func(t *testing.T) {
		var mu sync.Mutex
		var logs []string
		c := mcp.NewClient(&mcp.Implementation{Name: "rr", Version: "1"}, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				mu.Lock()
				logs = append(logs, fmt.Sprint(r.Params.Data))
				mu.Unlock()
			},
			ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "zoe"}}, nil
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rr := &roundRobin{hosts: []string{hostOf(t, a.Base), hostOf(t, b.Base)}, bearer: "rr-token-0123456789abcdef"}
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.Base + "/agents/px/mcp", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: rr}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		var sids []string
		for i := range 4 { // alternate: each replica runs calls, each takes answers for the other's
			if got, err := call(ctx, cs, "down__logs", nil); err != nil || got != "logged" {
				t.Fatalf("call %d of logs: %q %v", i, got, err)
			}
			if got, err := call(ctx, cs, "down__ask", nil); err != nil || got != "accept zoe" {
				t.Errorf("call %d of ask: the downstream got %q (%v), want the answer posted to either replica", i, got, err)
			}
			got, err := call(ctx, cs, "sid__sid", nil)
			if err != nil {
				t.Fatal(err)
			}
			sids = append(sids, got)
		}
		eventually(t, 5*time.Second, "every call's three log messages", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(logs) == 12
		})
		for _, s := range sids[1:] {
			if s != sids[0] {
				t.Errorf("the caller's downstream sessions through the replicas: %v, want one", sids)
				break
			}
		}
	})

	t.Run("token callers", func(t *testing.T) {
		id := 0
		sidOf := func(g *gw, who string) string {
			t.Helper()
			id++
			status, msg := agentCallBearer(t, g.Base+"/agents/px/mcp", who+"-token-0123456789abcdef", "sid__sid", id, map[string]any{}, map[string]any{}, nil)
			return sidText(t, status, msg)
		}
		webA, opsB := sidOf(a, "web"), sidOf(b, "ops")
		if webA == opsB {
			t.Errorf("web and ops share downstream session %q", webA)
		}
		if webB := sidOf(b, "web"); webB != webA {
			t.Errorf("web's downstream session: %q through a, %q through b", webA, webB)
		}
		if opsA := sidOf(a, "ops"); opsA != opsB {
			t.Errorf("ops's downstream session: %q through b, %q through a", opsB, opsA)
		}
		for i, g := range []*gw{a, b} {
			if v, _ := g.metric(t, `pallasgw_downstream_session_adoptions_total{server="sid"}`); v < 1 {
				t.Errorf("replica %d adopted %v sessions of sid, want at least 1", i, v)
			}
		}
	})

	// The store down: a call that needs it (a caller this replica has no
	// downstream session for) is refused with 503, Retry-After and a
	// JSON-RPC error; a caller whose session this replica holds goes on;
	// once the store is back the refused caller is served.
	t.Run("store down", func(t *testing.T) {
		rd.Stop()
		status, hdr, msg := rawCall(t, a.Base+"/agents/px/mcp", "new-token-0123456789abcdef", "sid__sid")
		e, _ := msg["error"].(map[string]any)
		if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || e == nil ||
			!strings.Contains(fmt.Sprint(e["message"]), "session store is unavailable") {
			t.Errorf("a call that needs the store while it is down: HTTP %d Retry-After %q %v, want 503, Retry-After and a JSON-RPC error",
				status, hdr.Get("Retry-After"), msg)
		}
		if strings.Contains(fmt.Sprint(msg), rd.URL()) {
			t.Errorf("the refusal names the store's address: %v", msg)
		}
		if v, _ := a.metric(t, `pallasgw_session_store_errors_total{op="get"}`); v < 1 {
			t.Errorf("store failures counted %v, want at least 1", v)
		}
		if status, _, msg := rawCall(t, a.Base+"/agents/px/mcp", "web-token-0123456789abcdef", "sid__sid"); status != http.StatusOK || msg["result"] == nil {
			t.Errorf("a caller whose session the replica holds, store down: HTTP %d %v, want served", status, msg)
		}
		rd.Start()
		eventually(t, 10*time.Second, "the refused caller served once the store is back", func() bool {
			status, _, msg := rawCall(t, a.Base+"/agents/px/mcp", "new-token-0123456789abcdef", "sid__sid")
			return status == http.StatusOK && msg["result"] != nil
		})
	})
}

// rawCall posts one sessionless 2026-07-28 tools/call of tool as bearer
// and returns the HTTP status, headers and the decoded answer.
func rawCall(t *testing.T, url, bearer, tool string) (int, http.Header, map[string]any) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":{},"_meta":%s}}`, tool, mustJSON(modernMeta(map[string]any{})))
	resp, err := post(url, body, map[string]string{"Authorization": "Bearer " + bearer, "Mcp-Protocol-Version": "2026-07-28",
		"Mcp-Method": "tools/call", "Mcp-Name": tool})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msg map[string]any
	_ = json.Unmarshal([]byte(sseData(string(raw))), &msg)
	return resp.StatusCode, resp.Header, msg
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// With sessions.store in Redis, tasks/list through one replica lists the
// caller's tasks created through another; another caller's stay out.
func TestSessionStoreTaskList(t *testing.T) {
	rd := gwtest.StartRedis(t)
	tasky, other, plain := newTaskDown(t, true), newTaskDown(t, true), newTaskDown(t, false)
	cfg := fmt.Sprintf(tasksCfg, stateKeyB64, tasky.ts.URL, other.ts.URL, plain.ts.URL)
	cfg = strings.Replace(cfg, "state_key:", fmt.Sprintf("sessions: {store: %q}\nstate_key:", rd.URL()), 1)
	g1, g2 := startGateway(t, cfg), startGateway(t, cfg)
	px1, px2 := g1.Base+"/agents/px/mcp", g2.Base+"/agents/px/mcp"
	_, msg := taskRPC(t, px1, "web", "tools/call", map[string]any{"name": "tasky__hold", "arguments": map[string]any{},
		"task": map[string]any{"ttl": 600000}})
	task, _ := rpcResult(t, "create", msg)["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		t.Fatalf("created task %v", msg)
	}
	for _, url := range []string{px1, px2} {
		_, msg = taskRPC(t, url, "web", "tasks/list", nil)
		listed, _ := json.Marshal(rpcResult(t, "tasks/list", msg)["tasks"])
		if !strings.Contains(string(listed), `"`+id+`"`) {
			t.Errorf("tasks/list through %s: %s, want the task %s created through the first replica", url, listed, id)
		}
		_, msg = taskRPC(t, url, "ops", "tasks/list", nil)
		if listed, _ := json.Marshal(rpcResult(t, "tasks/list", msg)["tasks"]); strings.Contains(string(listed), id) {
			t.Errorf("another caller's tasks/list through %s shows web's task: %s", url, listed)
		}
	}
	close(tasky.release)
}
