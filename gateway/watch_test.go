package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

// A change made after the config was loaded but before Watch armed the
// watch has no event of its own (and poll_interval may be 0): Watch must
// still pick it up, and then follow later changes.
func TestWatchCatchesAChangeBeforeItStarted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	write := func(desc string) {
		cfg := fmt.Sprintf("name: w\nlisten: \"127.0.0.1:0\"\nreload: {debounce: 20ms, poll_interval: 0}\nagents:\n  echo: {description: %q}\n", desc)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	description := func(g *Gateway) string { return g.current.Load().cfg.Agents["echo"].Description }
	write("loaded")
	g, err := New(Options{ConfigPath: path, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		g.cancelBase() // the health loops
		g.wg.Wait()
		g.listeners.closeAll()
	})
	write("edited before the watch")
	if err := g.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := description(g); got != "edited before the watch" {
		t.Fatalf("after Watch: description %q, want the edit made before it", got)
	}
	write("edited after")
	deadline := time.Now().Add(10 * time.Second)
	for description(g) != "edited after" {
		if time.Now().After(deadline) {
			t.Fatalf("the edit after Watch was not reloaded: description %q", description(g))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
