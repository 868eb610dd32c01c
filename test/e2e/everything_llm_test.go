//go:build e2e

package e2e

// An llm agent whose (fake) model calls tools of the real reference server
// @modelcontextprotocol/server-everything, over Streamable HTTP and over
// stdio: results, images and the long-running operation's progress travel
// through the gateway's tool loop to the model and to the MCP client.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

const everythingLLMConfig = `
name: e2e-llm
listen: "127.0.0.1:{{PORT}}"
reload: {poll_interval: 0}
models:
  default: openai.fake-model
  providers:
    openai: {base_url: "{{LLM}}", api_key: e2e-llm-key}
mcp:
  servers:
    everything:
{{SERVER}}
agents:
  thinker:
    instruction: Use the everything server's tools.
    servers: [everything]
`

// The long-running operation's arguments (seconds, steps) and the progress
// the agent relays for it: server-everything sends progress without a
// message, so the gateway relays "progress i/n".
const (
	everythingLongTool  = "trigger-long-running-operation"
	everythingLongSteps = 3
)

func TestEverythingLLMAgent(t *testing.T) {
	node := nodeBin(t)
	script := npmFile(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	cases := []struct {
		name   string
		server func(t *testing.T) string // the YAML of mcp.servers.everything, indented by 6
	}{
		{"streamable http", func(t *testing.T) string {
			return fmt.Sprintf("      transport: http\n      url: %q\n      timeout: 60s", startEverything(t))
		}},
		{"stdio", func(t *testing.T) string {
			return fmt.Sprintf("      transport: stdio\n      command: %q\n      args: [%q, stdio]\n      timeout: 60s", node, script)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm := fakellm.New(t)
			cfg := strings.NewReplacer("{{LLM}}", llm.OpenAIBaseURL(), "{{SERVER}}", c.server(t)).Replace(everythingLLMConfig)
			gw := startGateway(t, cfg)
			everythingThink(t, gw, llm)
		})
	}
}

// everythingThink runs one send_message whose model first calls three tools
// in parallel (echo, get-sum, get-tiny-image), then the long-running
// operation, then answers; it checks what the model and the client saw.
func everythingThink(t *testing.T, gw *gateway, llm *fakellm.Server) {
	llm.Script(
		fakellm.ToolCalls(
			fakellm.Call{ID: "e-echo", Name: "everything__echo", Args: json.RawMessage(`{"message":"hello from the model"}`)},
			fakellm.Call{ID: "e-sum", Name: "everything__get-sum", Args: json.RawMessage(`{"a":2,"b":40}`)},
			fakellm.Call{ID: "e-img", Name: "everything__get-tiny-image", Args: json.RawMessage(`{}`)},
		),
		fakellm.ToolCalls(fakellm.Call{ID: "e-long", Name: "everything__" + everythingLongTool,
			Args: json.RawMessage(fmt.Sprintf(`{"duration":1,"steps":%d}`, everythingLongSteps))}),
		fakellm.Text("the everything server did it all"),
	)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-llm", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.Base + "/agents/thinker/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "exercise everything"},
		Meta: mcp.Meta{"progressToken": "e2e-llm"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.IsError {
		t.Fatalf("result %+v", res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "the everything server did it all" {
		t.Fatalf("answer %q", text)
	}

	reqs := llm.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	offered := strings.Join(reqs[0].Chat.Tools, ",")
	for _, name := range []string{"everything__echo", "everything__get-sum", "everything__get-tiny-image", "everything__" + everythingLongTool} {
		if !strings.Contains(","+offered+",", ","+name+",") {
			t.Errorf("tool %s not offered; offered: %s", name, offered)
		}
	}
	results := everythingResults(reqs[1])
	if r := results["e-echo"]; !strings.Contains(r.Text, "hello from the model") {
		t.Errorf("echo result %q", r.Text)
	}
	if r := results["e-sum"]; !strings.Contains(r.Text, "42") {
		t.Errorf("get-sum result %q", r.Text)
	}
	if r := results["e-img"]; len(r.Images) != 1 || r.Images[0].MIMEType != "image/png" || r.Images[0].Format != "image_url" ||
		!bytes.HasPrefix(r.Images[0].Data, []byte("\x89PNG")) {
		t.Errorf("get-tiny-image result: text %q, images %d", r.Text, len(r.Images))
	}
	if r := everythingResults(reqs[2])["e-long"]; !strings.Contains(r.Text, "Long running operation completed") {
		t.Errorf("long-running result %q", r.Text)
	}

	// Progress: the SDK runs handlers asynchronously; order by counter
	// once the last notification (the one with total) has arrived.
	deadline := time.Now().Add(15 * time.Second)
	var got []*mcp.ProgressNotificationParams
	for {
		mu.Lock()
		got = append([]*mcp.ProgressNotificationParams(nil), progress...)
		mu.Unlock()
		if len(got) > 0 && everythingHasTotal(got) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	sort.SliceStable(got, func(i, j int) bool { return got[i].Progress < got[j].Progress })
	var msgs []string
	for i, p := range got {
		msgs = append(msgs, p.Message)
		if fmt.Sprint(p.ProgressToken) != "e2e-llm" || (i > 0 && p.Progress == got[i-1].Progress) {
			t.Errorf("notification %d: token %v progress %v", i, p.ProgressToken, p.Progress)
		}
		if (p.Total != 0) != (i == len(got)-1) {
			t.Errorf("notification %d (%q) total %v", i, p.Message, p.Total)
		}
	}
	label := "everything/" + everythingLongTool
	want := []string{"thinker step 2 (tool)", label + ": started"}
	for i := 1; i <= everythingLongSteps; i++ {
		want = append(want, fmt.Sprintf("%s: progress %d/%d", label, i, everythingLongSteps))
	}
	want = append(want, label+": completed", "thinker step 3 (llm)", "thinker: done")
	at := -1
	for i, m := range msgs {
		if m == want[0] {
			at = i
		}
	}
	if at < 0 || strings.Join(msgs[at:], "|") != strings.Join(want, "|") {
		t.Errorf("progress by counter\n got %q\nwant it to end with %q", msgs, want)
	}
	first := map[string]bool{}
	for _, m := range msgs[:max(at, 0)] {
		first[m] = true
	}
	for _, m := range []string{"thinker step 1 (llm)", "thinker step 1 (tool)", "everything/echo: started", "everything/echo: completed",
		"everything/get-sum: completed", "everything/get-tiny-image: completed", "thinker step 2 (llm)"} {
		if !first[m] {
			t.Errorf("progress lacks %q before the long-running step: %q", m, msgs)
		}
	}
}

// everythingResult is one tool result found in a chat request.
type everythingResult struct {
	Text   string
	Images []fakellm.Image
}

// everythingResults maps tool_call_id to result in an OpenAI chat request:
// tool messages, and the images of the user message that follows them.
func everythingResults(r fakellm.Request) map[string]everythingResult {
	out := map[string]everythingResult{}
	msgs := r.Chat.Messages
	for i, m := range msgs {
		if m.Role != "tool" {
			continue
		}
		res := everythingResult{Text: m.Text}
		for j := i + 1; j < len(msgs); j++ {
			if msgs[j].Role == "tool" {
				continue
			}
			if msgs[j].Role == "user" && strings.Contains(msgs[j].Text, m.ToolCallID) {
				res.Images = msgs[j].Images
			}
			break
		}
		out[m.ToolCallID] = res
	}
	return out
}

func everythingHasTotal(ps []*mcp.ProgressNotificationParams) bool {
	for _, p := range ps {
		if p.Total != 0 {
			return true
		}
	}
	return false
}
