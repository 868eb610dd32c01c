package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// scriptServer is a hand-written session-based Streamable HTTP server: it
// answers initialize with a session id, and every tools/call with call,
// which writes what a test wants (or anything a real server would not).
// The answers to its server-to-client requests arrive on replies.
type scriptServer struct {
	ts      *httptest.Server
	call    func(w http.ResponseWriter, id json.RawMessage, params json.RawMessage)
	replies chan json.RawMessage
	mu      sync.Mutex
	ids     []string // ids of the tools/call requests, as sent
	headers []http.Header
}

func newScriptServer(t *testing.T, call func(w http.ResponseWriter, id, params json.RawMessage)) *scriptServer {
	t.Helper()
	d := &scriptServer{call: call, replies: make(chan json.RawMessage, 8)}
	d.ts = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.ts.Close)
	return d
}

func (d *scriptServer) spec() ServerSpec { return ServerSpec{Name: "script", URL: d.ts.URL} }

func (d *scriptServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	switch {
	case msg.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"script","version":"1"}}}`, msg.ID)
	case msg.Method == "tools/call":
		d.mu.Lock()
		d.ids = append(d.ids, string(msg.ID))
		d.headers = append(d.headers, r.Header.Clone())
		d.mu.Unlock()
		d.call(w, msg.ID, msg.Params)
	case msg.Method == "" && len(msg.ID) > 0: // an answer to a server-to-client request
		d.replies <- json.RawMessage(body)
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// jsonAnswer writes body as the JSON answer.
func jsonAnswer(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

// sseEvent writes one SSE event and flushes it.
func sseEvent(w http.ResponseWriter, data string) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func TestRawCallPassesTheResultThrough(t *testing.T) {
	// What mcp-go's client would normalize: member order, an unknown member,
	// a large integer, unescaped HTML, a content type it does not know.
	const sent = `{"zeta":1,"content":[{"type":"text","text":"<b>&</b>"},{"type":"future","x":[1,2]}],` +
		`"structuredContent":{"n":12345678901234567890},"isError":false}`
	d := newScriptServer(t, func(w http.ResponseWriter, id, params json.RawMessage) {
		jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, sent))
	})
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt}, d.spec())
	args := json.RawMessage(`{"big":12345678901234567890,"s":"<x>"}`)
	res, err := m.CallToolRaw(testCtx(t), "script", "t", args, hdr("X-Tenant", "a"), nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.JSON) != sent || res.IsError {
		t.Errorf("result %s (isError %v), want the downstream's bytes %s", res.JSON, res.IsError, sent)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.headers[0]; h.Get("Mcp-Session-Id") != "s-1" || h.Get("Mcp-Protocol-Version") != "2025-06-18" || h.Get("X-Tenant") != "a" {
		t.Errorf("tools/call sent with headers %v", h)
	}
	if !strings.HasPrefix(d.ids[0], `"pgw-call-`) {
		t.Errorf("request id %s", d.ids[0])
	}
	if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("script", "ok")); got != 1 {
		t.Errorf("downstream calls ok = %v, want 1", got)
	}
}

func TestRawCallArgumentsUnchanged(t *testing.T) {
	got := make(chan string, 1)
	d := newScriptServer(t, func(w http.ResponseWriter, id, params json.RawMessage) {
		got <- string(params)
		jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, id))
	})
	m := newManager(t, Options{}, d.spec())
	if _, err := m.CallToolRaw(testCtx(t), "script", "t\"q", json.RawMessage(`{"big":12345678901234567890}`), nil, func(float64, *float64, string) {}, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	p := receive(t, "the params", got)
	if wire.Fast() { // the caller's bytes, in the caller's order
		if !strings.HasPrefix(p, `{"name":"t\"q","arguments":{"big":12345678901234567890},"_meta":{"progressToken":"pgw-`) {
			t.Errorf("params sent: %s", p)
		}
		return
	}
	// Off, encoding/json writes the params (callSent): the same members and
	// arguments, in its own order.
	var sent struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken string `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(p), &sent); err != nil || sent.Name != `t"q` || string(sent.Arguments) != `{"big":12345678901234567890}` ||
		!strings.HasPrefix(sent.Meta.ProgressToken, "pgw-") {
		t.Errorf("params sent: %s (%v)", p, err)
	}
}

// One SSE answer carrying progress, a log message and an elicitation
// request before the result: each reaches its place, and the result waits
// for the elicitation's answer as the downstream does.
func TestRawCallSSEStream(t *testing.T) {
	d := newScriptServer(t, nil)
	d.call = func(w http.ResponseWriter, id, params json.RawMessage) {
		var p struct {
			Meta struct{ ProgressToken string } `json:"_meta"`
		}
		_ = json.Unmarshal(params, &p)
		sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%q,"progress":1,"total":2,"message":"half"}}`, p.Meta.ProgressToken))
		sseEvent(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"l","data":"hello","_meta":{"k":"v"}}}`)
		sseEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"someone-else","progress":9}}`)
		sseEvent(w, `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"pick","requestedSchema":{"type":"object"}}}`)
		select {
		case reply := <-d.replies:
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, reply))
		case <-time.After(10 * time.Second):
		}
	}
	m := newManager(t, Options{}, d.spec())
	var mu sync.Mutex
	var seen []string
	note := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	relay := &Relay{
		Log: func(p map[string]any) { note(fmt.Sprintf("log %v %v %v", p["level"], p["data"], p["_meta"])) },
		Request: func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			note(method + " " + string(params))
			return json.RawMessage(`{"action":"accept","content":{"c":"x"}}`), nil
		},
	}
	onProgress := func(p float64, total *float64, msg string) { note(fmt.Sprintf("progress %v/%v %s", p, *total, msg)) }
	res, err := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, onProgress, CallOptions{Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":"{\"jsonrpc\":\"2.0\",\"id\":\"e1\",\"result\":{\"action\":\"accept\",\"content\":{\"c\":\"x\"}}}"}]}`
	if string(res.JSON) != want {
		t.Errorf("result %s\nwant   %s", res.JSON, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, "\n"); got != "progress 1/2 half\nlog info hello map[k:v]\nelicitation/create {\"message\":\"pick\",\"requestedSchema\":{\"type\":\"object\"}}" {
		t.Errorf("the caller saw:\n%s", got)
	}
}

// A sampling request from a Go SDK server (stateful, as the conformance
// server runs) and its logs, through the raw reader.
func TestRawCallGoSDKServer(t *testing.T) {
	d := newRelayServer(t)
	m := newManager(t, Options{}, d.spec())
	ctx := testCtx(t)
	var col logCollector
	relay := &Relay{Log: col.log, LogLevel: mcp.LoggingLevelInfo,
		Request: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"role":"assistant","model":"m","content":{"type":"text","text":"ok"}}`), nil
		}}
	res, err := m.CallToolRaw(ctx, "relay", "logs", json.RawMessage(`{"tag":"r"}`), nil, nil, CallOptions{Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.JSON), "logged r") || strings.Join(col.got(), ",") != "info:r 1,error:r 2" {
		t.Errorf("result %s, logs %v", res.JSON, col.got())
	}
	res, err = m.CallToolRaw(ctx, "relay", "sample", nil, nil, nil, CallOptions{Relay: relay})
	if err != nil || !strings.Contains(string(res.JSON), "sampled by m") {
		t.Errorf("sample: %s, %v", res.JSON, err)
	}
	// Without a relay the request is refused with pallasgw's reason.
	res, err = m.CallToolRaw(ctx, "relay", "sample", nil, nil, nil, CallOptions{})
	if err != nil || !strings.Contains(string(res.JSON), "is not relayed for this request") {
		t.Errorf("sample without a relay: %s, %v", res.JSON, err)
	}
}

func TestRawCallErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		answer  func(w http.ResponseWriter, id json.RawMessage)
		check   func(res *RawResult, err error) bool
		outcome string
	}{
		{"JSON-RPC error", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad n"}}`, id))
		}, func(_ *RawResult, err error) bool {
			return errors.Is(err, mcp.ErrInvalidParams) && strings.Contains(err.Error(), "bad n")
		}, "error"},
		{"JSON-RPC error on the stream", func(w http.ResponseWriter, id json.RawMessage) {
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"boom"}}`, id))
		}, func(_ *RawResult, err error) bool { return errors.Is(err, mcp.ErrInternalError) }, "error"},
		{"HTTP 400, JSON-RPC error with a null id", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"boom"}}`)
		}, func(_ *RawResult, err error) bool { return errors.Is(err, mcp.ErrInternalError) }, "error"},
		{"isError result", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}`, id))
		}, func(res *RawResult, err error) bool { return err == nil && res.IsError }, "error"},
		{"not JSON", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, `{"jsonrpc":"2.0",`)
		}, func(_ *RawResult, err error) bool {
			return err != nil && strings.Contains(err.Error(), "failed to decode response")
		}, "error"},
		{"result not an object", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"oops"}`, id))
		}, func(_ *RawResult, err error) bool {
			return err != nil && strings.Contains(err.Error(), "malformed response: the result is not an object")
		}, "error"},
		{"no result", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s}`, id))
		}, func(_ *RawResult, err error) bool { return errors.Is(err, errNoResult) }, "error"},
		{"another request's answer", func(w http.ResponseWriter, id json.RawMessage) {
			jsonAnswer(w, `{"jsonrpc":"2.0","id":99,"result":{"content":[]}}`)
		}, func(_ *RawResult, err error) bool {
			return err != nil && strings.Contains(err.Error(), "not the answer to request")
		}, "error"},
		{"unexpected content type", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "hello")
		}, func(_ *RawResult, err error) bool {
			return err != nil && strings.Contains(err.Error(), "unexpected content type: text/plain")
		}, "error"},
		{"HTTP 500", func(w http.ResponseWriter, id json.RawMessage) {
			http.Error(w, "down", http.StatusInternalServerError)
		}, func(_ *RawResult, err error) bool {
			return err != nil && strings.Contains(err.Error(), "request failed with status 500: down")
		}, "error"},
	} {
		// Both ways of the wire switch: the hand-written client
		// (wire.ClientCall) and mcp-go's transport (callSent).
		for _, fast := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/fast=%v", c.name, fast), func(t *testing.T) {
				wire.SetFast(fast)
				t.Cleanup(func() { wire.SetFast(true) })
				d := newScriptServer(t, func(w http.ResponseWriter, id, _ json.RawMessage) { c.answer(w, id) })
				mt := newMetrics()
				m := newManager(t, Options{Metrics: mt}, d.spec())
				res, err := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
				if !c.check(res, err) {
					t.Errorf("got %+v, %v", res, err)
				}
				if err != nil && !strings.HasPrefix(err.Error(), `downstream "script": tools/call "t": `) {
					t.Errorf("error does not name the server and call: %v", err)
				}
				if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("script", c.outcome)); got != 1 {
					t.Errorf("downstream calls %s = %v, want 1", c.outcome, got)
				}
				d.mu.Lock()
				defer d.mu.Unlock()
				if len(d.ids) != 1 { // an answered call is never sent again
					t.Errorf("the call was sent %d times", len(d.ids))
				}
			})
		}
	}
}

func TestRawCallReconnects(t *testing.T) {
	t.Run("session forgotten", func(t *testing.T) {
		d := newDownstream(t, true)
		m := newManager(t, Options{}, d.spec("argos"))
		ctx := testCtx(t)
		if _, err := m.CallToolRaw(ctx, "argos", "echo", nil, nil, nil, CallOptions{}); err != nil {
			t.Fatal(err)
		}
		d.restart(false) // 404 for the old session
		res, err := m.CallToolRaw(ctx, "argos", "echo", json.RawMessage(`{"text":"again"}`), nil, nil, CallOptions{})
		if err != nil || !strings.Contains(string(res.JSON), "echo:again") {
			t.Fatalf("call after restart: %v %v", res, err)
		}
		if n := d.count("POST", "initialize"); n != 2 {
			t.Fatalf("initialize sent %d times, want 2", n)
		}
	})
	t.Run("lost twice", func(t *testing.T) {
		d := newDownstream(t, true)
		m := newManager(t, Options{}, d.spec("argos"))
		d.reject.Store(true)
		_, err := m.CallToolRaw(testCtx(t), "argos", "echo", nil, nil, nil, CallOptions{})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "session lost twice") {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if n := d.count("POST", "initialize"); n != 2 {
			t.Fatalf("initialize sent %d times, want 2 (one reconnect)", n)
		}
	})
	t.Run("stream cut mid-call", func(t *testing.T) {
		ts := cutServer(t)
		m := newManager(t, Options{}, ServerSpec{Name: "cut", URL: ts.URL + "/mcp", Timeout: 30 * time.Second})
		_, err := m.CallToolRaw(testCtx(t), "cut", "cut", nil, nil, nil, CallOptions{})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "session lost during the call") {
			t.Fatalf("err = %v, want ErrUnavailable: session lost during the call", err)
		}
	})
}

func TestRawCallTimeout(t *testing.T) {
	d := newDownstream(t, false)
	mt := newMetrics()
	spec := d.spec("argos")
	spec.Timeout = 300 * time.Millisecond
	m := newManager(t, Options{Metrics: mt}, spec)
	_, err := m.CallToolRaw(testCtx(t), "argos", "wait", json.RawMessage(`{"id":"slow"}`), nil, nil, CallOptions{})
	if Outcome(err) != "timeout" || !strings.Contains(err.Error(), "no answer within the server's timeout of 300ms") {
		t.Fatalf("err = %v, want the server's timeout", err)
	}
	if id := receive(t, "the downstream handler to see the cancellation", d.canceled); id != "slow" {
		t.Fatalf("canceled %q", id)
	}
	if got := counterValue(t, mt.DownstreamCalls.WithLabelValues("argos", "timeout")); got != 1 {
		t.Fatalf("downstream calls timeout = %v, want 1", got)
	}
}

// SSE and stdio servers take mcp-go's path; the result is still raw JSON.
func TestRawCallFallsBack(t *testing.T) {
	_, url := sseDownstream(t)
	m := newManager(t, Options{}, ServerSpec{Name: "legacy", Transport: TransportSSE, URL: url})
	res, err := m.CallToolRaw(testCtx(t), "legacy", "whoami", nil, hdr("X-Tenant", "s"), nil, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.JSON) != `{"content":[{"type":"text","text":"s"}]}` {
		t.Errorf("result %s", res.JSON)
	}
}

// A stream the server ends before the answer, after an event id, is
// resumed with Last-Event-ID (SEP-1699), as mcp-go's client does.
func TestRawCallResumesStream(t *testing.T) {
	var resumed sync.WaitGroup
	resumed.Add(1)
	var lastEventID string
	var callID json.RawMessage
	d := newScriptServer(t, func(w http.ResponseWriter, id, _ json.RawMessage) {
		callID = id
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nretry: 10\ndata:\n\n")
	})
	inner := d.ts.Config.Handler
	d.ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			lastEventID = r.Header.Get("Last-Event-ID")
			resumed.Done()
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, callID))
			return
		}
		inner.ServeHTTP(w, r)
	})
	m := newManager(t, Options{}, d.spec())
	res, err := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
	if err != nil || string(res.JSON) != `{"content":[]}` {
		t.Fatalf("got %v, %v", res, err)
	}
	resumed.Wait()
	if lastEventID != "ev-1" {
		t.Errorf("resumed with Last-Event-ID %q", lastEventID)
	}
}

// A tool's own error answer that happens to speak of a session is the
// tool's answer: the call ran once and is not sent again, on either path.
func TestToolErrorAboutSessionsIsNotResent(t *testing.T) {
	d := newScriptServer(t, func(w http.ResponseWriter, id, _ json.RawMessage) {
		jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Browser session not found: tab 3 was closed"}}`, id))
	})
	m := newManager(t, Options{}, d.spec())
	_, rawErr := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
	_, typedErr := m.CallTool(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ids) != 2 {
		t.Errorf("the downstream ran %d calls for 2 (ids %v)", len(d.ids), d.ids)
	}
	for _, err := range []error{rawErr, typedErr} {
		if err == nil || !strings.Contains(err.Error(), "Browser session not found") || errors.Is(err, ErrUnavailable) {
			t.Errorf("error %v, want the tool's own error answer", err)
		}
	}
}

// A response stream that broke off after it began, and cannot be reopened,
// is a delivered call: it fails, and is not sent again.
func TestBrokenStreamNotReopenedIsNotResent(t *testing.T) {
	d := newScriptServer(t, func(w http.ResponseWriter, _, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nretry: 10\ndata:\n\n")
	})
	inner := d.ts.Config.Handler
	d.ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNotFound) // the stream cannot be resumed (a restart lost it)
			return
		}
		inner.ServeHTTP(w, r)
	})
	m := newManager(t, Options{}, d.spec())
	_, err := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed to resume") {
		t.Errorf("error %v, want the failed resumption", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ids) != 1 {
		t.Errorf("the call was sent %d times, want once", len(d.ids))
	}
}

// A downstream that redirects does not take the session's headers (its
// credentials) anywhere else: the redirect is the answer, an error.
func TestRedirectIsNotFollowed(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	d := newScriptServer(t, func(w http.ResponseWriter, _, _ json.RawMessage) {
		w.Header().Set("Location", other.URL+"/mcp")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	m := newManager(t, Options{}, d.spec())
	h := hdr("X-Api-Key", "k-123")
	if _, err := m.CallToolRaw(testCtx(t), "script", "t", nil, h, nil, CallOptions{}); err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("raw: %v, want the redirect as an error", err)
	}
	if _, err := m.CallTool(testCtx(t), "script", "t", nil, h, nil, CallOptions{}); err == nil {
		t.Error("typed: want the redirect as an error")
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d requests followed the redirect to another host", n)
	}
}

// A downstream's endless SSE line is cut off at Options.MaxMessageBytes.
func TestEndlessLineIsBounded(t *testing.T) {
	d := newScriptServer(t, func(w http.ResponseWriter, _, _ json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 1<<10))
		_, _ = w.Write([]byte("data: "))
		for range testLimit>>10 + 2 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	m := newManager(t, Options{MaxMessageBytes: testLimit}, d.spec())
	if _, err := m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("error %v, want the message refused as too large", err)
	}
}

// A refused reconnection after the stream began is not "never delivered",
// although a refused dial alone would be.
func TestDeliveredErrorsAreNeverResent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	if !notDelivered(dial) {
		t.Fatal("a refused dial should count as not delivered")
	}
	resume := deliveredError{Err: fmt.Errorf("failed to resume the SSE stream for the response: %w", dial)}
	if notDelivered(resume) {
		t.Error("a refused reconnection of a begun stream counted as not delivered: the call would run twice")
	}
	if !isLost(resume) {
		t.Error("a refused reconnection should still end the session")
	}
	answer := answeredError{Err: errors.New("Bad Request: No valid session ID provided")}
	if isLost(answer) || notDelivered(answer) {
		t.Error("an answer on a 200 counted as a lost session")
	}
}

// CallToolJSON takes the raw path on a Streamable HTTP session and decodes
// the result as mcp-go's client does, within the call: a result mcp-go
// refuses fails the call, named and counted; a result that asks for input
// is asked for again through mcp-go's client.
func TestCallToolJSON(t *testing.T) {
	var rounds atomic.Int32
	sent := make(chan string, 4)
	d := newScriptServer(t, func(w http.ResponseWriter, id, params json.RawMessage) {
		sent <- string(params)
		var p struct{ Name string }
		_ = json.Unmarshal(params, &p)
		result := `{"content":[{"type":"text","text":"done"}]}`
		switch {
		case p.Name == "refused":
			result = `{"structuredContent":{"n":1}}`
		case p.Name == "ask" && rounds.Add(1) == 1:
			result = `{"resultType":"input_required","inputRequests":{},"requestState":"s1"}`
		}
		jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
	})
	mt := newMetrics()
	m := newManager(t, Options{Metrics: mt}, d.spec())
	ctx := testCtx(t)

	res, err := m.CallToolJSON(ctx, "script", "t", json.RawMessage(`{"b":12345678901234567890,"a":"<x>"}`), nil, nil, CallOptions{})
	if err != nil || text(t, res) != "done" {
		t.Fatalf("CallToolJSON: %v, %v", res, err)
	}
	if p := receive(t, "the params", sent); p != `{"name":"t","arguments":{"b":12345678901234567890,"a":"<x>"}}` {
		t.Errorf("params sent: %s (want the arguments as given)", p)
	}

	_, err = m.CallToolJSON(ctx, "script", "refused", nil, nil, nil, CallOptions{})
	if err == nil || !strings.Contains(err.Error(), `downstream "script"`) || !strings.Contains(err.Error(), "content is missing") {
		t.Errorf("a result mcp-go refuses: %v", err)
	}
	receive(t, "the params", sent)

	res, err = m.CallToolJSON(ctx, "script", "ask", json.RawMessage(`{"q":1}`), nil, nil, CallOptions{})
	if err != nil || text(t, res) != "done" {
		t.Fatalf("a result that asks for input: %v, %v", res, err)
	}
	receive(t, "the first round", sent)
	if p := receive(t, "the second round", sent); !strings.Contains(p, `"arguments":{"q":1}`) {
		t.Errorf("second round sent %s", p)
	}
	d.mu.Lock()
	if n := len(d.ids); n != 4 || !strings.HasPrefix(d.ids[2], `"pgw-call-`) || strings.HasPrefix(d.ids[3], `"pgw-call-`) {
		t.Errorf("tools/call ids %v: want the last one from mcp-go's client", d.ids)
	}
	d.mu.Unlock()
	if ok, bad := counterValue(t, mt.DownstreamCalls.WithLabelValues("script", "ok")), counterValue(t, mt.DownstreamCalls.WithLabelValues("script", "error")); ok != 2 || bad != 1 {
		t.Errorf("downstream calls: ok %v, error %v; want 2 and 1", ok, bad)
	}
}

// With the wire switch off a raw call goes through mcp-go's transport
// (callSent): it still sends the caller's extra params, a task and _meta,
// returns the downstream's result bytes and error answer as they came,
// relays the stream's log messages to the call, and a stream that broke
// off and could not be reopened is not sent again.
func TestSentCall(t *testing.T) {
	wire.SetFast(false)
	t.Cleanup(func() { wire.SetFast(true) })
	got := make(chan string, 1)
	d := newScriptServer(t, func(w http.ResponseWriter, id, params json.RawMessage) {
		got <- string(params)
		switch {
		case strings.Contains(string(params), `"fail"`):
			jsonAnswer(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32042,"message":"no","data":{"why":"x"}}}`, id))
		default:
			sseEvent(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`)
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[],"resultType":"complete","x-extra":{"b":2,"a":1}}}`, id))
		}
	})
	m := newManager(t, Options{}, d.spec())
	var logs []any
	ctx, relay := testCtx(t), &Relay{Log: func(p map[string]any) { logs = append(logs, p["data"]) }}
	extras := CallExtras{
		Params: map[string]json.RawMessage{"task": json.RawMessage(`{"ttl":60000}`), "requestState": json.RawMessage(`"st"`)},
		Meta:   map[string]json.RawMessage{"io.example/caps": json.RawMessage(`{"elicitation":{}}`)},
	}
	res, err := m.CallToolRaw(ctx, "script", "t", json.RawMessage(`{"big":12345678901234567890}`), nil, nil, CallOptions{Extras: extras, Relay: relay})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[],"resultType":"complete","x-extra":{"b":2,"a":1}}`; string(res.JSON) != want {
		t.Errorf("result %s, want the downstream's bytes %s", res.JSON, want)
	}
	p := receive(t, "the params", got)
	for _, want := range []string{`"name":"t"`, `"arguments":{"big":12345678901234567890}`, `"task":{"ttl":60000}`,
		`"requestState":"st"`, `"io.example/caps":{"elicitation":{}}`} {
		if !strings.Contains(p, want) {
			t.Errorf("params sent %s, want %s in them", p, want)
		}
	}
	if len(logs) != 1 || logs[0] != "hello" {
		t.Errorf("the call's log messages: %v, want [hello]", logs)
	}

	_, err = m.CallToolRaw(testCtx(t), "script", "fail", nil, nil, nil, CallOptions{})
	<-got
	var de *downstreamError
	if !errors.As(err, &de) || de.Code != -32042 || string(de.Data) != `{"why":"x"}` || errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v, want the downstream's answer with its code and data", err)
	}
}
