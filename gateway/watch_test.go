package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// An edit of an agent card reloads the config: valid → invalid (the old
// snapshot stays) → valid, and a new card adds an agent.
func TestWatchReloadsAgentCards(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pallasgw.yaml")
	cards := filepath.Join(dir, "cards")
	if err := os.Mkdir(cards, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "name: w\nlisten: \"127.0.0.1:0\"\nreload: {debounce: 20ms, poll_interval: 0}\nagent_cards: [cards]\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	card := func(name, front string) {
		if err := os.WriteFile(filepath.Join(cards, name), []byte("---\n"+front+"\n---\nYou help.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	card("echo.md", "description: first")
	g, err := New(Options{ConfigPath: path, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		g.cancelBase()
		g.wg.Wait()
		g.listeners.closeAll()
	})
	if err := g.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	desc := func() string {
		if a := g.current.Load().cfg.Agents["echo"]; a != nil {
			return a.Description
		}
		return ""
	}
	card("echo.md", "description: second")
	waitFor("the edited card", func() bool { return desc() == "second" })
	card("echo.md", "description: third\ncolour: red")
	waitFor("the failed reload", func() bool {
		st := g.lastReload.Load()
		return st != nil && !st.OK && strings.Contains(st.Error, "echo.md:3: agents.echo.colour: unknown key")
	})
	if desc() != "second" {
		t.Fatalf("a bad card replaced the config: %q", desc())
	}
	card("echo.md", "description: fourth")
	card("more.md", "description: new")
	waitFor("the fixed card and the new one", func() bool {
		return desc() == "fourth" && g.current.Load().cfg.Agents["more"] != nil
	})
}

// A reload that failed because a file the new config names does not exist
// yet (the README's order for pins: add pins:, then `pallasgw pins init`)
// runs again when the file appears, without another edit of the config:
// on the file's event (poll off), and on the poll alone (the file in a
// directory that does not exist yet, so no watch can see it). The pins
// file, an env_file and an agent_cards directory alike.
func TestWatchRetriesWhenAMissingFileAppears(t *testing.T) {
	const event, poll = "{debounce: 20ms, poll_interval: 0}", "{debounce: 20ms, poll_interval: 50ms}"
	for _, tc := range []struct {
		name, reload, line, path, content, failure string
	}{
		{"pins/event", event, "pins: pins.yaml", "pins.yaml", "servers: {}\n", "pins: pins file"},
		{"pins/poll", poll, "pins: later/pins.yaml", "later/pins.yaml", "servers: {}\n", "pins: pins file"},
		{"env_file/event", event, "env_file: app.env", "app.env", "X=1\n", "env_file:"},
		{"env_file/poll", poll, "env_file: later/app.env", "later/app.env", "X=1\n", "env_file:"},
		{"agent_cards/event", event, "agent_cards: [cards]", "cards/more.md", "---\ndescription: more\n---\nHelp.\n", "is not a directory"},
		{"agent_cards/poll", poll, "agent_cards: [later/cards]", "later/cards/more.md", "---\ndescription: more\n---\nHelp.\n", "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "pallasgw.yaml")
			cfg := "name: w\nlisten: \"127.0.0.1:0\"\nreload: " + tc.reload + "\nagents:\n  echo: {}\n"
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := New(Options{ConfigPath: path, Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(func() {
				cancel()
				g.cancelBase()
				g.wg.Wait()
				g.listeners.closeAll()
			})
			if err := g.Watch(ctx); err != nil {
				t.Fatal(err)
			}
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("timed out waiting for %s (last reload %+v)", what, g.lastReload.Load())
					}
				}
			}
			served := g.current.Load()
			if err := os.WriteFile(path, []byte(cfg+tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			waitFor("the failed reload", func() bool {
				st := g.lastReload.Load()
				return st != nil && !st.OK && strings.Contains(st.Error, tc.failure)
			})
			file := filepath.Join(dir, tc.path)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			waitFor("the config with the file in force", func() bool {
				st := g.lastReload.Load()
				return g.current.Load() != served && st != nil && st.OK
			})
		})
	}
}
