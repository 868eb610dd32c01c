package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

// Agent loop: send_message on an llm agent whose (fake, zero
// latency, in this process) model makes one tool call — echo on the
// in-process downstream — then answers. Measured: calls/s at 64 callers on
// this machine's cores and the gateway's CPU per call (/proc/<pid>/stat).
// The direct path is the same work without the gateway: each caller streams
// the first chat completion from the fake, calls the tool on the downstream
// and streams the second completion itself.
func BenchmarkAgentLoop(b *testing.B) { benchAgentLoop(b, 0, 30) }

// BenchmarkAgentLoop20Tools is the same loop with 20 more downstream tools
// of a realistic schema offered to the model, as a real agent would: the
// per-call cost of the tool definitions shows here. (No target of its own.)
func BenchmarkAgentLoop20Tools(b *testing.B) { benchAgentLoop(b, 20, 35) }

func benchAgentLoop(b *testing.B, extraTools, order int) {
	d := newDownstream(b, extraTools)
	llm := fakellm.NewAuto(b, fakellm.AutoOptions{Tool: "srv__echo", Args: json.RawMessage(`{"text":"hi"}`), Answer: "the tool said hi"})
	g := startGateway(b, fmt.Sprintf(agentLoopConfig, llm.OpenAIBaseURL(), d.url()))
	gwOpts := func(n int) load.Options {
		return load.Options{URL: g.agentURL("loop"), Style: load.Sessionless, Concurrency: loopCallers, Requests: n,
			Tool: "send_message", Arguments: map[string]any{"message": "say hi"},
			Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * loopCallers, MaxConnsPerHost: 2 * loopCallers}}}
	}
	direct := &directLoop{llm: llm.OpenAIBaseURL() + "/chat/completions", tool: d.url(), tools: toolDefs(extraTools),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * loopCallers, MaxConnsPerHost: 4 * loopCallers}}}
	runLoad(b, gwOpts(256))
	direct.run(b, loopCallers, 256)
	if warmUpOnly(b) {
		return
	}
	var m loopMeasures
	for r := 0; r < rounds(); r++ {
		gw := func() {
			before, t0 := g.usage(), selfCPU(b)
			res := runLoad(b, gwOpts(calls(b)))
			after := g.usage()
			m.benchGW += selfCPU(b) - t0
			m.gw.cpu += after.cpu - before.cpu
			m.gw.mallocs += after.mallocs - before.mallocs
			m.gw.bytes += after.bytes - before.bytes
			m.gwCalls += res.Calls
			m.gwRates, m.gwP50 = append(m.gwRates, res.Rate()), append(m.gwP50, ms(res.Percentile(50)))
		}
		dir := func() {
			t0 := selfCPU(b)
			res := direct.run(b, loopCallers, calls(b))
			m.benchDirect += selfCPU(b) - t0
			m.directCalls += calls(b)
			m.dRates, m.dP50 = append(m.dRates, res.rate), append(m.dP50, ms(res.p50))
		}
		if r%2 == 0 { // ABBA
			gw()
			dir()
		} else {
			dir()
			gw()
		}
	}
	g.profileLoad(fmt.Sprintf("agentloop-%dtools", 1+extraTools), gwOpts(0))
	name := "agent loop"
	if extraTools > 0 {
		name = fmt.Sprintf("agent loop, %d more tools", extraTools)
	}
	reportAgentLoop(b, name, order, m)
}

const loopCallers = 64

// loopMeasures accumulates the rounds of both paths.
type loopMeasures struct {
	gwRates, dRates, gwP50, dP50 []float64
	gw                           usage         // the gateway process
	benchGW, benchDirect         time.Duration // this process on each path
	gwCalls, directCalls         int
}

func reportAgentLoop(b *testing.B, name string, order int, m loopMeasures) {
	cpu, allocs, bytes := perCall(usage{}, m.gw, m.gwCalls)
	rate, dRate := median(m.gwRates), median(m.dRates)
	perGWBench, perDirect := m.benchGW/time.Duration(m.gwCalls), m.benchDirect/time.Duration(m.directCalls)
	ceiling := float64(runtime.NumCPU()) / cpu.Seconds() // calls/s if the gateway had every core
	reportGateway(b, cpu, allocs, bytes)
	b.ReportMetric(rate, "calls/s")
	b.ReportMetric(rate/dRate, "throughput-ratio")

	b.Logf("%s (1 tool call, then the answer), %d callers, %d calls per path and round, %d rounds (medians):\n%s",
		name, loopCallers, calls(b), rounds(), table([]string{"figure", "direct (no gateway)", "via gateway", "ratio", "target"}, func(add func(...string)) {
			add("calls/s", fmtRate(dRate), fmtRate(rate), fmt.Sprintf("%.2f", rate/dRate), "≥ 2000 "+verdict(rate >= 2000))
			add("p50", fmtMS(median(m.dP50)), fmtMS(median(m.gwP50)), fmt.Sprintf("%.2f", median(m.gwP50)/median(m.dP50)), "")
			add("CPU/call, all processes", us(perDirect), us(perGWBench+cpu), fmt.Sprintf("%.2f", float64(perGWBench+cpu)/float64(perDirect)), "")
			add("  of which the gateway", "", us(cpu), "", "< 1 ms "+verdict(cpu < time.Millisecond))
			add(fmt.Sprintf("gateway alone on %d cores", runtime.NumCPU()), "", fmtRate(ceiling)+" (CPU-bound ceiling)", "", "≥ 2000 "+verdict(ceiling >= 2000))
			add("gateway allocs/call", "", fmt.Sprintf("%.0f (%.1f kB)", allocs, bytes/1024), "", "")
		}))
	record(order, name+": calls/s, 64 callers", "≥ 2,000/s", fmtRate(rate), fmtRate(dRate), fmt.Sprintf("%.0f%%", 100*rate/dRate))
	record(order+1, name+": gateway CPU per call", "< 1 ms", us(cpu), "", fmt.Sprintf("%.2f× target", float64(cpu)/float64(time.Millisecond)))
	record(order+2, fmt.Sprintf("%s: CPU-bound ceiling of the gateway on %d cores", name, runtime.NumCPU()), "≥ 2,000/s",
		fmtRate(ceiling), "", fmt.Sprintf("%.2f× target", ceiling/2000))
	record(order+3, name+": gateway allocs per call", "", fmt.Sprintf("%.0f allocs, %.1f kB", allocs, bytes/1024), "", "")
}

const agentLoopConfig = `
name: bench
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: %q, api_key: "sk-bench", timeout: 60s}
mcp:
  servers:
    srv: {url: %q, timeout: 30s}
agents:
  loop:
    instruction: "You are a benchmark. Call srv__echo, then answer."
    servers: [srv]
`

// directLoop is the agent loop without the gateway, run by each caller.
type directLoop struct {
	llm, tool string
	tools     json.RawMessage // the tool definitions sent to the model
	client    *http.Client
}

type loopResult struct {
	rate float64
	p50  time.Duration
}

func (d *directLoop) run(b *testing.B, callers, n int) loopResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), maxRun)
	defer cancel()
	var (
		mu       sync.Mutex
		issued   int
		lat      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := 1; ; id++ {
				mu.Lock()
				if issued >= n || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				issued++
				mu.Unlock()
				t0 := time.Now()
				err := d.once(ctx, id)
				mu.Lock()
				lat = append(lat, time.Since(t0))
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.Errorf("direct agent loop: %v", firstErr)
	}
	slices.Sort(lat)
	return loopResult{rate: float64(len(lat)) / elapsed.Seconds(), p50: lat[len(lat)/2]}
}

// toolDefs are the OpenAI tool definitions the gateway offers the model:
// srv__echo and the extra srv__search_NN tools.
func toolDefs(extra int) json.RawMessage {
	defs := []any{map[string]any{"type": "function", "function": map[string]any{"name": "srv__echo", "description": "Echoes text.",
		"parameters": json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}}}
	for i := 0; i < extra; i++ {
		defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprintf("srv__search_%02d", i),
			"description": "Searches the knowledge base for documents that match a query, newest first.", "parameters": json.RawMessage(realisticSchema)}})
	}
	b, _ := json.Marshal(defs)
	return b
}

// once is one loop: completion, tool call, completion.
func (d *directLoop) once(ctx context.Context, id int) error {
	msgs := []any{
		map[string]any{"role": "system", "content": "You are a benchmark. Call srv__echo, then answer."},
		map[string]any{"role": "user", "content": "say hi"},
	}
	call, err := d.complete(ctx, msgs)
	if err != nil {
		return err
	}
	result, err := d.callTool(ctx, id, call)
	if err != nil {
		return err
	}
	msgs = append(msgs,
		map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": call.ID, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": call.Args}}}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": result})
	_, err = d.complete(ctx, msgs)
	return err
}

type toolCall struct{ ID, Name, Args string }

// complete streams one chat completion and accumulates its tool call.
func (d *directLoop) complete(ctx context.Context, msgs []any) (toolCall, error) {
	body, _ := json.Marshal(map[string]any{"model": "fake-model", "stream": true, "messages": msgs, "tools": d.tools,
		"stream_options": map[string]any{"include_usage": true}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.llm, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := d.client.Do(req)
	if err != nil {
		return toolCall{}, err
	}
	defer resp.Body.Close()
	var call toolCall
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return call, err
		}
		for _, c := range chunk.Choices {
			for _, tc := range c.Delta.ToolCalls {
				call.ID += tc.ID
				call.Name += tc.Function.Name
				call.Args += tc.Function.Arguments
			}
		}
	}
	return call, sc.Err()
}

// callTool is one sessionless tools/call straight to the downstream.
func (d *directLoop) callTool(ctx context.Context, id int, call toolCall) (string, error) {
	if call.Name != "srv__echo" {
		return "", fmt.Errorf("the fake model called %q", call.Name)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Args), &args); err != nil {
		return "", fmt.Errorf("tool arguments: %w", err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": "echo", "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.tool, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	resp, err := d.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(data)
			}
		}
	}
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("tools/call answer: %w", err)
	}
	if r.Error != nil || len(r.Result.Content) == 0 {
		return "", errors.New("tools/call failed: " + string(raw))
	}
	return r.Result.Content[0].Text, nil
}
