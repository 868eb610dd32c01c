package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPinsAppliedWhenTheFileAppears follows the README's order on a
// running gateway: add `pins:` and `pin_tools: enforce` to the config (the
// reload fails: the pins file does not exist yet), then `pallasgw pins
// init`. Creating the file is enough: the gateway serves pinned without
// SIGHUP, POST /-/reload or another edit of the config.
func TestPinsAppliedWhenTheFileAppears(t *testing.T) {
	dir := t.TempDir()
	d := newPinDict(t, "http", dir)
	port := freePorts(t, 1)[0]
	cfg := filepath.Join(dir, "pallasgw.yaml")
	pins := filepath.Join(dir, "pins.yaml")
	unpinned := fmt.Sprintf("name: pins\nlisten: \"127.0.0.1:%d\"\nreload: {debounce: 20ms, poll_interval: 0}\nmcp:\n  servers:\n    dict: {%s, timeout: 20s}\nagents:\n  px: {kind: proxy, servers: [dict]}\n", port, d.entry)
	if err := os.WriteFile(cfg, []byte(unpinned), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGatewayAt(t, cfg, port)
	px := pxConnect(t, g.Base+"/agents/px/mcp", "", nil, nil)

	pinned := strings.Replace(unpinned, "timeout: 20s}", "timeout: 20s, pin_tools: enforce}", 1) + "pins: pins.yaml\n"
	if err := os.WriteFile(cfg, []byte(pinned), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the reload that fails for the missing pins file", func() bool {
		last, _ := g.status(t)["last_reload"].(map[string]any)
		return last != nil && last["ok"] == false && strings.Contains(fmt.Sprint(last["error"]), "pins file")
	})
	initPins(t, cfg, pins)
	eventually(t, 10*time.Second, "the pins in force", func() bool {
		last, _ := g.status(t)["last_reload"].(map[string]any)
		return last != nil && last["ok"] == true
	})
	mutate(t, px, 2)
	eventually(t, 10*time.Second, "the changed lookup hidden (enforce)", func() bool { return lookupDescription(t, px) == "" })
	text, isErr := pinCall(t, px, "lookup", map[string]any{"word": "cat"})
	if !isErr || !strings.Contains(text, "awaits approval") {
		t.Errorf("a call of the changed tool: %q (isError %v)", text, isErr)
	}
	// The refusal's request id, which the answer names, is in the log: the
	// call's audit line.
	m := regexp.MustCompile(`\(request id ([0-9a-f]+)\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no request id in the refusal %q", text)
	}
	audited := func() bool {
		for _, line := range strings.Split(g.Logs(), "\n") {
			if strings.Contains(line, `"msg":"policy decision"`) && strings.Contains(line, `"request_id":"`+m[1]+`"`) &&
				strings.Contains(line, `"tool":"lookup","decision":"deny","reason":"tool_awaits_approval"`) {
				return true
			}
		}
		return false
	}
	eventually(t, 10*time.Second, "the audit line refusing the call "+m[1], audited)
}
