// Package load drives MCP tools/call requests over raw HTTP at a fixed
// concurrency, in either protocol style, and reports calls/s, latency
// percentiles and errors. It is the engine of the pgwload command and of the
// benchmarks under test/bench; it talks to whatever URL it is given and
// knows nothing of pallasgw's internals.
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Style is the MCP protocol style of the requests.
type Style string

const (
	// Sessionless is protocol 2026-07-28: no initialize, no session, the
	// version and client info in _meta, Mcp-Method/Mcp-Name headers.
	Sessionless Style = "sessionless"
	// Session is 2025-11-25: initialize once per worker, then calls with the
	// Mcp-Session-Id the server issued (if any).
	Session Style = "session"
)

// Options configure a run. Requests stops the run after that many calls,
// Duration after that long (whichever comes first; one of them must be set).
type Options struct {
	URL         string
	Style       Style
	Concurrency int
	Requests    int
	Duration    time.Duration
	Tool        string
	Arguments   map[string]any
	Progress    bool // send a progressToken (the answer streams as SSE)
	Header      http.Header
	Client      *http.Client // default: a keep-alive client sized for Concurrency
}

// Result is what a run measured.
type Result struct {
	Calls     int
	Errors    int
	FirstErr  string
	Elapsed   time.Duration
	latencies []time.Duration
}

// Rate is calls per second.
func (r Result) Rate() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// Percentile returns the p-th latency percentile (0 < p <= 100).
func (r Result) Percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies))*p/100+0.5) - 1
	return r.latencies[max(0, min(i, len(r.latencies)-1))]
}

func (r Result) String() string {
	return fmt.Sprintf("%d calls in %s: %.0f calls/s, p50 %s, p95 %s, p99 %s, %d errors",
		r.Calls, r.Elapsed.Round(time.Millisecond), r.Rate(), r.Percentile(50), r.Percentile(95), r.Percentile(99), r.Errors)
}

// Run executes the load and waits for every worker.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Concurrency < 1 || o.URL == "" || o.Tool == "" || (o.Requests <= 0 && o.Duration <= 0) {
		return Result{}, errors.New("load: need url, tool, concurrency >= 1 and requests or duration")
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Concurrency * 2, MaxConnsPerHost: o.Concurrency * 2}}
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	var (
		mu     sync.Mutex
		res    Result
		issued int
		wg     sync.WaitGroup
	)
	next := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil || (o.Requests > 0 && issued >= o.Requests) {
			return false
		}
		issued++
		return true
	}
	start := time.Now()
	for w := 0; w < o.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := &worker{o: o}
			for id := 1; next(); id++ {
				t0 := time.Now()
				err := wk.call(ctx, id)
				d := time.Since(t0)
				if ctx.Err() != nil && o.Duration > 0 && err != nil {
					return // the run ended mid-call: not an error of the target
				}
				mu.Lock()
				res.Calls++
				res.latencies = append(res.latencies, d)
				if err != nil {
					res.Errors++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	sort.Slice(res.latencies, func(i, j int) bool { return res.latencies[i] < res.latencies[j] })
	return res, nil
}

type worker struct {
	o       Options
	session string
	ready   bool
}

func (w *worker) call(ctx context.Context, id int) error {
	if w.o.Style == Session && !w.ready {
		if err := w.initialize(ctx); err != nil {
			return err
		}
	}
	params := map[string]any{"name": w.o.Tool, "arguments": w.o.Arguments}
	meta := map[string]any{}
	if w.o.Progress {
		meta["progressToken"] = id
	}
	if w.o.Style == Sessionless {
		meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "pgwload", "version": "1"}
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
	}
	if len(meta) > 0 {
		params["_meta"] = meta
	}
	msg, err := w.post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}, id)
	if err != nil {
		return err
	}
	var r struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return fmt.Errorf("bad response: %w", err)
	}
	switch {
	case r.Error != nil:
		return fmt.Errorf("JSON-RPC error: %s", r.Error.Message)
	case r.Result == nil:
		return errors.New("response without result")
	case r.Result.IsError:
		// What the server said, not the envelope around it.
		var text []string
		for _, c := range r.Result.Content {
			text = append(text, c.Text)
		}
		return fmt.Errorf("isError result: %s", truncate(strings.Join(text, " "), 300))
	}
	return nil
}

func (w *worker) initialize(ctx context.Context) error {
	_, err := w.post(ctx, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "pgwload", "version": "1"},
	}}, 0)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if _, err := w.post(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, -1); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	w.ready = true
	return nil
}

// post sends one message and returns the JSON-RPC response with id wantID
// (read from a JSON body or an SSE stream); wantID < 0 expects none.
func (w *worker) post(ctx context.Context, msg map[string]any, wantID int) (json.RawMessage, error) {
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range w.o.Header {
		req.Header[k] = v
	}
	if w.o.Style == Sessionless {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", fmt.Sprint(msg["method"]))
		if p, ok := msg["params"].(map[string]any); ok && p["name"] != nil {
			req.Header.Set("Mcp-Name", fmt.Sprint(p["name"]))
		}
	} else if w.ready || msg["method"] == "notifications/initialized" {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if w.session != "" {
			req.Header.Set("Mcp-Session-Id", w.session)
		}
	}
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		w.session = sid
	}
	if wantID < 0 {
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(string(b), 200))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readSSE(resp.Body, wantID)
	}
	b, err := io.ReadAll(resp.Body)
	return b, err
}

// readSSE returns the data of the event that is the response to id.
func readSSE(r io.Reader, id int) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	// The scanner starts small and grows to the longest event. A buffer
	// made at full size per answer (it was 64 KiB) is the load generator's
	// own cost, paid only on the SSE answers of the gateway and not on the
	// JSON ones of the direct path: it showed as gateway tail latency.
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && string(m.ID) == fmt.Sprint(id) {
			return json.RawMessage(data), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("stream ended without the response")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
