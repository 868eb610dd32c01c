package agents_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// An llm agent with stream_text sends its model's text as progress
// "{agent} text: ..." to a real SDK client that asked for progress; the
// pieces make up the answer, and they come before the closing message.
// Without stream_text, or without a progress token, no text is sent.
func TestStreamTextToSDKClient(t *testing.T) {
	fake := fakellm.New(t)
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: fake.OpenAIBaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := `
name: unit
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1"}
agents:
  live: {model: openai.m, stream_text: true}
  quiet: {model: openai.m}
`
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": p})
	const answer = "The quick brown fox jumps over the lazy dog, twice, and then once more for luck."
	for _, tc := range []struct {
		agent    string
		token    bool
		wantText bool
	}{{"live", true, true}, {"quiet", true, false}, {"live", false, false}} {
		fake.Script(fakellm.Text(answer))
		var mu sync.Mutex
		var msgs []string
		cs := ta.Session(t, tc.agent, "bob", "", func(p *sdk.ProgressNotificationParams) {
			mu.Lock()
			msgs = append(msgs, p.Message)
			mu.Unlock()
		})
		params := &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "go"}}
		if tc.token {
			params.Meta = sdk.Meta{"progressToken": "t1"}
		}
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError || agenttest.AllText(res) != answer {
			t.Fatalf("%s: %v %+v", tc.agent, err, res)
		}
		// The SDK client may hand notifications over after the result:
		// poll for the closing message.
		for deadline := agenttest.WaitLimit(t); tc.token && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n := len(msgs)
			last := ""
			if n > 0 {
				last = msgs[n-1]
			}
			mu.Unlock()
			if last == tc.agent+": done" {
				break
			}
		}
		mu.Lock()
		var text strings.Builder
		textAt, doneAt := -1, -1
		for i, m := range msgs {
			if piece, ok := strings.CutPrefix(m, tc.agent+" text: "); ok {
				text.WriteString(piece)
				textAt = i
			}
			if m == tc.agent+": done" {
				doneAt = i
			}
		}
		mu.Unlock()
		switch {
		case tc.wantText && (text.String() != answer || textAt > doneAt):
			t.Errorf("%s: text progress %q (last at %d, done at %d), want the answer before done", tc.agent, text.String(), textAt, doneAt)
		case !tc.wantText && text.Len() > 0:
			t.Errorf("%s (token %v): text progress sent: %q", tc.agent, tc.token, msgs)
		case !tc.token && len(msgs) > 0:
			t.Errorf("progress without a token: %q", msgs)
		}
	}
}

// Deltas are coalesced: at most one text message per 100 ms, whatever is
// left when the turn ends goes out before the next step message.
func TestStreamTextCoalesced(t *testing.T) {
	var tookNs atomic.Int64 // how long the deltas took, however loaded the machine
	m := agenttest.NewFuncLLM(func(n int, req llm.Request) (*llm.Response, error) {
		var all strings.Builder
		start := time.Now()
		deadline := start.Add(350 * time.Millisecond)
		for i := 0; time.Now().Before(deadline); i++ {
			d := string(rune('a' + i%26))
			all.WriteString(d)
			req.OnText(d)
			time.Sleep(2 * time.Millisecond)
		}
		tookNs.Store(int64(time.Since(start)))
		return agenttest.Text(all.String())
	})
	cfg := "name: unit\nmodels: {providers: {openai: {base_url: \"http://127.0.0.1:1/v1\"}}}\nagents:\n  live: {model: openai.m, stream_text: true}\n"
	ta := agenttest.NewWith(t, cfg, &agenttest.FakeDown{}, map[string]llm.Provider{"openai": m})
	var mu sync.Mutex
	var msgs []string
	cs := ta.Session(t, "live", "bob", "", func(p *sdk.ProgressNotificationParams) {
		mu.Lock()
		if strings.HasPrefix(p.Message, "live text: ") {
			msgs = append(msgs, strings.TrimPrefix(p.Message, "live text: "))
		}
		mu.Unlock()
	})
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "go"}, Meta: sdk.Meta{"progressToken": 9}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	// The SDK client may hand notifications over after the result: poll.
	want := agenttest.AllText(res)
	for deadline := agenttest.WaitLimit(t); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		got := strings.Join(msgs, "")
		mu.Unlock()
		if got == want {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(msgs, ""); got != want {
		t.Errorf("text pieces %q do not make up the answer %q", got, agenttest.AllText(res))
	}
	// At most one message per 100 ms of deltas, and the rest at the end;
	// sized to the time the deltas took, not to a wall-clock guess.
	took := time.Duration(tookNs.Load())
	if most := int(took/(100*time.Millisecond)) + 2; len(msgs) < 2 || len(msgs) > most {
		t.Errorf("%d text messages for %s of deltas, want one per 100 ms (2 to %d): %q", len(msgs), took, most, msgs)
	}
}
