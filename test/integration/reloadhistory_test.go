package integration

import (
	"net/http"
	"strings"
	"testing"
)

// /-/status keeps the recent reload results, the failed ones with their
// file:line, bounded.
func TestStatusReloadHistory(t *testing.T) {
	cfg := "name: it\nlisten: \"127.0.0.1:{{PORT}}\"\nreload: {poll_interval: 0}\nagents:\n  echo: {model: passthrough}\n"
	g := startGateway(t, cfg)
	g.writeConfig(t, cfg+"bogus: 1\n")
	if code, _ := g.reload(t); code != http.StatusUnprocessableEntity {
		t.Fatalf("bad reload: %d", code)
	}
	for i := 0; i < 25; i++ {
		g.writeConfig(t, cfg+"# "+strings.Repeat("x", i)+"\n")
		if code, _ := g.reload(t); code != 200 {
			t.Fatalf("reload %d: %d", i, code)
		}
	}
	st := g.status(t)
	list, _ := st["reloads"].([]any)
	if len(list) != 20 {
		t.Fatalf("%d reloads listed, want the last 20", len(list))
	}
	last := list[len(list)-1].(map[string]any)
	if last["ok"] != true || last["config_hash"] != st["config_hash"] || last["trigger"] == "" {
		t.Errorf("newest reload %v (serving %v)", last, st["config_hash"])
	}
	g.writeConfig(t, cfg+"bogus: 1\n")
	g.reload(t)
	st = g.status(t)
	list, _ = st["reloads"].([]any)
	failed := list[len(list)-1].(map[string]any)
	if failed["ok"] != false || !strings.Contains(failed["error"].(string), ".yaml:") || !strings.Contains(failed["error"].(string), "bogus") {
		t.Errorf("failed reload %v", failed)
	}
}
