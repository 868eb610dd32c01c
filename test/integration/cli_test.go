package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
