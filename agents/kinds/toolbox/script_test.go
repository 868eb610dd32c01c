package toolbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// run_script on a toolbox: the caller's tools as functions, each call
// governed as execute_tool; a denied tool stops the script; progress names
// each call.
func TestToolboxRunScript(t *testing.T) {
	down := toolboxDown()
	down.Call = func(_ context.Context, server, tool string, args map[string]any, _ mcpclient.ProgressFunc) (*mcpgo.CallToolResult, error) {
		if tool == "query" {
			return mcpgo.NewToolResultText(fmt.Sprintf(`{"hits": [%q, "b"]}`, args["q"])), nil
		}
		return down.Results[server+"/"+tool], nil
	}
	ta := agenttest.New(t, fmt.Sprintf(toolboxCfg, false), down)
	var mu sync.Mutex
	var progress []string
	alice := ta.Session(t, "tb", "", "", func(p *sdk.ProgressNotificationParams) {
		mu.Lock()
		progress = append(progress, p.Message)
		mu.Unlock()
	})
	call := func(code string) tbResult {
		t.Helper()
		res, err := alice.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_script",
			Arguments: map[string]any{"code": code, "agent_id": "alice"}, Meta: sdk.Meta{"progressToken": "p1"}})
		if err != nil {
			t.Fatal(err)
		}
		return tbResult{text: agenttest.AllText(res), isError: res.IsError}
	}
	r := call("ok = files.read(path='x')['ok']\nhits = search.query(q='a')['hits']\nresult = {'ok': ok, 'hits': hits}")
	if r.isError || r.text != `result: {"ok":true,"hits":["a","b"]}` {
		t.Errorf("got %+v", r)
	}
	// The client may hand its notifications on after the result: poll.
	got := ""
	for deadline := agenttest.WaitLimit(t); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		got = strings.Join(progress, "|")
		mu.Unlock()
		if strings.Contains(got, "step 1: files.read") && strings.Contains(got, "step 2: search.query") {
			break
		}
	}
	if !strings.Contains(got, "step 1: files.read") || !strings.Contains(got, "step 2: search.query") {
		t.Errorf("progress %q", got)
	}
	r = call("print('a')\nfiles.write()\nprint('b')")
	if !r.isError || !strings.Contains(r.text, "line 2: ") || !strings.Contains(r.text, "DENIED_BY_POLICY") || strings.Contains(r.text, "\nb\n") {
		t.Errorf("denied: %+v", r)
	}
	r = call("r = down.x()")
	if !r.isError || !strings.Contains(r.text, "line 1: server down has no tool x you may call") {
		t.Errorf("a server whose tools could not be listed: %+v", r)
	}
	for _, c := range down.CallLog() {
		if c == "files/write" || c == "search/secret" {
			t.Errorf("denied tool called: %s", c)
		}
	}
}
