package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// pallasgw chat talks to an agent of a running gateway: progress on
// stderr, the answer on stdout; without -m it reads one message a line and
// sends the conversation so far as history.
func TestChatCommand(t *testing.T) {
	g := startGateway(t, `
name: chat
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens: [{name: me, token: chat-token-0123456789}]
agents:
  echo: {model: passthrough}
  pipe: {kind: chain, sequence: [echo]}
`)
	url := fmt.Sprintf("http://127.0.0.1:%d", g.Port)
	cmd := exec.Command(binary(), "chat", "--url", url, "--token", "chat-token-0123456789", "pipe", "-m", "hello there")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "hello there\n" || !strings.Contains(stderr.String(), "pipe step 1 (tool)") || !strings.Contains(stderr.String(), "pipe: done") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	cmd = exec.Command(binary(), "chat", "--url", url, "--token", "chat-token-0123456789", "echo")
	cmd.Stdin = strings.NewReader("one\n\ntwo\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "one\ntwo\n" {
		t.Errorf("interactive chat: %v %q", err, out)
	}
	cmd = exec.Command(binary(), "chat", "--url", url, "--token", "wrong-token-0123456789", "echo", "-m", "hi")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "pallasgw chat:") {
		t.Errorf("a wrong token: %v %s", err, out)
	}
}

// chat's /system and /set follow what the agent's send_message takes: an
// agent with overrides gets system_append and params (checked by the
// agent: a bad param is its error, the chat goes on), one without is told
// about and gets the message only.
func TestChatSlashCommandsAgainstAgents(t *testing.T) {
	g := startGateway(t, `
name: chat-commands
listen: "127.0.0.1:{{PORT}}"
agents:
  open: {model: passthrough, overrides: {params: true, system: true}}
  closed: {model: passthrough}
`)
	url := fmt.Sprintf("http://127.0.0.1:%d", g.Port)
	chat := func(agent, in string) (string, string) {
		cmd := exec.Command(binary(), "chat", "--url", url, agent)
		cmd.Stdin = strings.NewReader(in)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chat %s: %v\n%s", agent, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	out, errs := chat("open", "/tools\n/system Be brief.\n/set temperature=0.2\nhello\n/set bogus=1\nagain\n/quit\nnever\n")
	if out != "hello\n" || !strings.Contains(errs, "send_message(conversation_id, history, images, message*, params, system_append, system_override)") ||
		!strings.Contains(errs, `params: unknown parameter "bogus"`) {
		t.Errorf("open: stdout %q, stderr:\n%s", out, errs)
	}
	out, errs = chat("closed", "/system Be brief.\n/set temperature=0.2\nhello\n")
	if out != "hello\n" || !strings.Contains(errs, "agent closed does not take system_append") || !strings.Contains(errs, "agent closed does not take per-call params") {
		t.Errorf("closed: stdout %q, stderr:\n%s", out, errs)
	}
}

// chat shows each downstream tool call of an llm agent on stderr with its
// arguments and the start of its result (the progress's _meta, which the
// agent adds only for a caller that asks with io.pallasgw/toolDetail).
func TestChatShowsToolCalls(t *testing.T) {
	e := startLLM(t, loopAgents, llmOpts{})
	e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-1", Name: "srv__echo", Args: callArgs(`{"text":"tide tables"}`)}),
		fakellm.ToolCalls(fakellm.Call{ID: "c-2", Name: "srv__fail", Args: callArgs(`{}`)}), fakellm.Text("all done"))
	cmd := exec.Command(binary(), "chat", "--url", e.Base, "x")
	cmd.Stdin = strings.NewReader("look it up\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "all done\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	for _, w := range []string{"· srv/echo: started\n    → {\"text\":\"tide tables\"}\n", "· srv/echo: completed\n    ← echo: tide tables\n",
		"· srv/fail: failed\n    ← error: boom: disk on fire\n"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}

	// Without the key, the same progress carries no detail.
	var log progressLog
	cs := e.session(t, "x", "", log.add)
	e.oai.Script(fakellm.ToolCalls(fakellm.Call{ID: "c-3", Name: "srv__echo", Args: callArgs(`{"text":"quiet"}`)}), fakellm.Text("ok"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"message": "go"},
		Meta: mcp.Meta{"progressToken": "plain"}}); err != nil {
		t.Fatal(err)
	}
	if !log.has("srv/echo: completed") {
		t.Fatalf("progress %q", log.messages())
	}
	for _, p := range log.sorted(t) {
		if len(p.Meta) > 0 {
			t.Errorf("progress %q carries _meta %v without io.pallasgw/toolDetail", p.Message, p.Meta)
		}
	}
}

// pallasgw import writes a config that pallasgw validate accepts, and
// reports what it did not map.
func TestImportCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte("name: p\nregistry_port: 24200\nagents:\n  helper: {module: agents.helper, port: 24201, title: Helper}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "fastagent.config.yaml"), []byte("default_model: openai.m\nexecution_engine: asyncio\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents", "helper.py"), []byte("@fast.agent(name=\"helper\", instruction=\"Help.\")\ndef main(): ...\n"), 0o644)
	out := filepath.Join(t.TempDir(), "gw.yaml")
	b, err := exec.Command(binary(), "import", "--pallas", dir, "--out", out).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "not mapped: fastagent.config.yaml: execution_engine: not mapped") {
		t.Fatalf("import: %v\n%s", err, b)
	}
	cmd := exec.Command(binary(), "validate", "--config", out)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	if b, err := cmd.CombinedOutput(); err != nil {
		raw, _ := os.ReadFile(out)
		t.Fatalf("validate: %v\n%s\n%s", err, b, raw)
	}
	// --cards: one card per agent, and a config pointing at them.
	outDir := t.TempDir()
	out, cards := filepath.Join(outDir, "gw.yaml"), filepath.Join(outDir, "cards")
	if b, err := exec.Command(binary(), "import", "--pallas", dir, "--out", out, "--cards", cards).CombinedOutput(); err != nil ||
		!strings.Contains(string(b), "wrote 1 agent cards into") {
		t.Fatalf("import --cards: %v\n%s", err, b)
	}
	card, _ := os.ReadFile(filepath.Join(cards, "helper.md"))
	if raw, _ := os.ReadFile(out); !strings.Contains(string(raw), "agent_cards:\n  - cards") || !strings.Contains(string(card), "---\nHelp.\n") {
		t.Fatalf("config:\n%s\ncard:\n%s", raw, card)
	}
	cmd = exec.Command(binary(), "validate", "--config", out)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "(1 agents") {
		t.Fatalf("validate with cards: %v\n%s", err, b)
	}
}

// pallasgw chat prints what the gateway said when it refuses, and the
// request id to grep its log for, not only the HTTP status text.
func TestChatShowsGatewayRefusal(t *testing.T) {
	g := startGateway(t, `
name: chat-refused
listen: "127.0.0.1:{{PORT}}"
auth:
  mode: tokens
  tokens:
    - {name: web, token: web-token-0123456789abcdef}
policy:
  callers:
    web: {agents: ["public_*"]}
agents:
  public_echo: {model: passthrough}
  internal: {model: passthrough}
`)
	url := fmt.Sprintf("http://127.0.0.1:%d", g.Port)
	var ids []string
	for _, tc := range []struct{ name, token, agent, want string }{
		{"agent not allowed", "web-token-0123456789abcdef", "internal", "the gateway answered 403 Forbidden: access denied: agent_not_allowed (request id "},
		{"unknown agent", "web-token-0123456789abcdef", "nosuch", `the gateway answered 404 Not Found: unknown agent "nosuch" (request id `},
		{"wrong token", "wrong-token-0123456789abcdef", "public_echo", "the gateway answered 401 Unauthorized: access denied: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binary(), "chat", "--url", url, "--token", tc.token, tc.agent, "-m", "hi").CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("chat: %v\n%s\nwant %q", err, out, tc.want)
			}
			if tc.name == "agent not allowed" {
				_, id, _ := strings.Cut(string(out), "(request id ")
				id, _, _ = strings.Cut(id, ")")
				ids = append(ids, id)
			}
		})
	}
	// The request id of a refusal is the one in the gateway's log line.
	g.Stop() // flushes the log
	for _, id := range ids {
		if id == "" || !strings.Contains(g.Logs(), `"request_id":"`+id+`"`) {
			t.Errorf("request id %q not in the gateway's log:\n%s", id, g.Logs())
		}
	}
}
