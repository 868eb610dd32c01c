package gateway

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// Watch follows the config file (and env_file) until ctx ends: fsnotify on
// their directories (editors' rename-over and Kubernetes' ..data symlink
// swap both show up as events there), debounced and coalesced, plus the
// poll_interval content-hash backstop. Reload itself skips unchanged hashes.
//
// The directories are watched when Watch returns. A change made between
// loading the config and then has no event, and the content hash the poll
// compares with is taken now: so Watch reloads once (a no-op when nothing
// changed) after arming the watch and before taking the hash.
func (g *Gateway) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	armed := map[string]bool{}
	g.arm(w, armed)
	g.Reload("file")
	lastHash := g.fileHash()
	ctx, cancel := context.WithCancel(ctx)
	g.stopWatch = cancel
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer w.Close()
		g.watchLoop(ctx, w, armed, lastHash)
	}()
	return nil
}

// arm watches the directories of the watched files that armed lacks.
func (g *Gateway) arm(w *fsnotify.Watcher, armed map[string]bool) {
	_, dirs := g.watched()
	for d := range dirs {
		if !armed[d] {
			if err := w.Add(d); err == nil {
				armed[d] = true
			} else {
				g.log.Warn("cannot watch config directory", zap.String("dir", d), zap.Error(err))
			}
		}
	}
}

func (g *Gateway) stopWatcher() {
	if g.stopWatch != nil {
		g.stopWatch()
	}
}

// watched returns the files that trigger a reload and their directories.
func (g *Gateway) watched() (files map[string]bool, dirs map[string]bool) {
	files, dirs = map[string]bool{}, map[string]bool{}
	add := func(p string) {
		if p == "" {
			return
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return
		}
		files[abs] = true
		dirs[filepath.Dir(abs)] = true
		// Follow a symlinked file (ConfigMap: file -> ..data/file) to watch
		// where the content really changes too.
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			files[real] = true
			dirs[filepath.Dir(real)] = true
		}
	}
	add(g.opts.ConfigPath)
	add(g.current.Load().cfg.EnvFilePath)
	add(g.current.Load().cfg.PinsPath)
	for _, d := range g.current.Load().cfg.AgentCardDirs {
		dirs[d] = true // its *.md files: see relevant
	}
	return files, dirs
}

// isCard reports whether name is a *.md file of an agent_cards directory.
func (g *Gateway) isCard(name string) bool {
	return filepath.Ext(name) == ".md" && slices.Contains(g.current.Load().cfg.AgentCardDirs, filepath.Dir(name))
}

// watchLoop runs the watch until ctx ends. lastHash is the content hash
// of the files as the current config was loaded from them.
func (g *Gateway) watchLoop(ctx context.Context, w *fsnotify.Watcher, armed map[string]bool, lastHash [32]byte) {
	rearm := func() { g.arm(w, armed) }
	var debounce <-chan time.Time
	var poll <-chan time.Time
	if iv := g.current.Load().cfg.Reload.PollInterval; iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				delete(armed, ev.Name) // a watched directory itself went away
			}
			if g.relevant(ev.Name) {
				debounce = time.After(g.current.Load().cfg.Reload.Debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			g.log.Warn("config watcher error", zap.Error(err))
		case <-debounce:
			debounce = nil
			g.Reload("file")
			lastHash = g.fileHash()
			rearm()
		case <-poll:
			if h := g.fileHash(); h != lastHash {
				lastHash = h
				g.Reload("poll")
			}
			rearm()
		}
	}
}

// relevant reports whether an event touches a watched file, including the
// Kubernetes ..data symlink and the timestamped directories behind it.
func (g *Gateway) relevant(name string) bool {
	files, _ := g.watched()
	if files[name] || g.isCard(name) {
		return true
	}
	base := filepath.Base(name)
	return base == "..data" || len(base) > 2 && base[:2] == ".."
}

// fileHash hashes the config file and env_file contents for the poll
// backstop; errors hash as empty (a file mid-swap is retried next tick).
func (g *Gateway) fileHash() [32]byte {
	h := sha256.New()
	cfg := g.current.Load().cfg
	for _, p := range []string{g.opts.ConfigPath, cfg.EnvFilePath, cfg.PinsPath} {
		if p == "" {
			continue
		}
		b, _ := os.ReadFile(p)
		h.Write(b)
	}
	for _, d := range g.current.Load().cfg.AgentCardDirs {
		cards, _ := filepath.Glob(filepath.Join(d, "*.md")) // sorted
		for _, p := range cards {
			b, _ := os.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
