package agents_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
)

// A 2026-07-28 subscriptions/listen to an agent that can subscribe nothing
// is answered with its acknowledgement first, then the result, both tagged
// with the subscription id, every time: mcp-go alone drops the
// acknowledgement about one run in eight (endpoint.AwaitListenAck). Runs
// concurrently to widen the race it closes.
func TestSubscriptionsListenAckFirst(t *testing.T) {
	ta := agenttest.New(t, `
name: unit
agents:
  echo: {model: passthrough}
`, &agenttest.FakeDown{})
	const rounds, workers = 200, 4
	var wg sync.WaitGroup
	errs := make(chan string, rounds)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds/workers; i++ {
				if msg := listenOnce(ta.Srv.URL + "/echo"); msg != "" {
					errs <- msg
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 3 {
			t.Error(e)
		}
	}
	if n > 0 {
		t.Errorf("%d of %d listens answered without the acknowledgement first", n, rounds)
	}
}

// listenOnce posts one subscriptions/listen asking for tools/list_changed
// and returns what is wrong with the answer, or "".
func listenOnce(url string) string {
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return "HTTP " + resp.Status + " " + resp.Header.Get("Content-Type") + ": " + string(raw)
	}
	var frames []map[string]any
	for _, line := range strings.Split(string(raw), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) != nil {
				return "bad SSE data: " + data
			}
			frames = append(frames, m)
		}
	}
	if len(frames) != 2 || frames[0]["method"] != "notifications/subscriptions/acknowledged" || frames[1]["result"] == nil {
		return "frames: " + string(raw)
	}
	for _, f := range frames {
		p, _ := f["params"].(map[string]any)
		if p == nil {
			p, _ = f["result"].(map[string]any)
		}
		meta, _ := p["_meta"].(map[string]any)
		if meta["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
			return "untagged frame: " + string(raw)
		}
	}
	return ""
}
