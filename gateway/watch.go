package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/gateway/config"
)

// Watch follows the config file and the files it names (env_file, the
// pins file, the agent_cards directories) until ctx ends: fsnotify on
// their directories (editors' rename-over and Kubernetes' ..data symlink
// swap both show up as events there), debounced and coalesced, plus the
// poll_interval content-hash backstop. Reload itself skips unchanged hashes.
//
// The files followed are those of the serving config and those of the
// last reload when it failed: a reload that failed because a file the new
// config names is missing (a pins file not written yet) runs again when
// that file appears, by either trigger.
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
	ctx, cancel := context.WithCancel(ctx)
	g.stopWatch = cancel
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer w.Close()
		g.watchLoop(ctx, w, armed)
	}()
	return nil
}

// arm watches the directories of the watched files that armed lacks. A
// directory that does not exist yet is left to the next arm (after a
// reload or a poll) and to the poll, which sees its files appear.
func (g *Gateway) arm(w *fsnotify.Watcher, armed map[string]bool) {
	_, dirs := g.watched()
	for d := range dirs {
		if armed[d] {
			continue
		}
		switch err := w.Add(d); {
		case err == nil:
			armed[d] = true
		case errors.Is(err, fs.ErrNotExist):
			g.log.Debug("config directory does not exist yet; the poll follows it", zap.String("dir", d))
		default:
			g.log.Warn("cannot watch config directory", zap.String("dir", d), zap.Error(err))
		}
	}
}

func (g *Gateway) stopWatcher() {
	if g.stopWatch != nil {
		g.stopWatch()
	}
}

// refs are the files followed besides the config file: the serving
// config's, and the failed last reload's (nil when it succeeded).
func (g *Gateway) refs() []config.Refs {
	out := []config.Refs{g.current.Load().cfg.Refs()}
	if f := g.failedRefs.Load(); f != nil {
		out = append(out, *f)
	}
	return out
}

// watched returns the files that trigger a reload and the directories to
// watch for them: each file's, and each agent_cards directory with its
// parent (so that creating a missing one is seen).
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
	for _, r := range g.refs() {
		add(r.EnvFile)
		add(r.Pins)
		for _, d := range r.CardDirs {
			files[d] = true // the directory appearing
			dirs[d] = true  // its *.md files: see relevant
			dirs[filepath.Dir(d)] = true
		}
	}
	return files, dirs
}

// isCard reports whether name is a *.md file of an agent_cards directory.
func (g *Gateway) isCard(name string) bool {
	if filepath.Ext(name) != ".md" {
		return false
	}
	for _, r := range g.refs() {
		if slices.Contains(r.CardDirs, filepath.Dir(name)) {
			return true
		}
	}
	return false
}

// watchLoop runs the watch until ctx ends. Every reload, whatever its
// trigger, records the content hash of the files it read (loadedHash) and
// asks for a re-arm (rearm): the files it followed may have changed.
func (g *Gateway) watchLoop(ctx context.Context, w *fsnotify.Watcher, armed map[string]bool) {
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
		case <-g.rearm:
			rearm()
		case <-debounce:
			debounce = nil
			g.Reload("file")
		case <-poll:
			if h := g.fileHash(); h != *g.loadedHash.Load() {
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

// noteReload records, after a load, the files the attempt named when it
// failed (failed; nil when it loaded or changed nothing) and the content
// hash of the files followed now, and wakes the watch loop to re-arm.
func (g *Gateway) noteReload(failed *config.Refs) {
	g.failedRefs.Store(failed)
	h := g.fileHash()
	g.loadedHash.Store(&h)
	select {
	case g.rearm <- struct{}{}:
	default: // a re-arm is pending already
	}
}

// attemptedRefs are the files a failed load named: the loaded config's
// (it failed to build or bind), else as far as the load read them.
func attemptedRefs(cfg *config.Config, err error) *config.Refs {
	if cfg != nil {
		r := cfg.Refs()
		return &r
	}
	var ce *config.Errors
	if errors.As(err, &ce) {
		return &ce.Refs
	}
	return nil
}

// fileHash hashes the paths and contents of the files followed (the
// config file, and each config's env_file, pins file and agent cards) for
// the poll backstop; a missing file hashes as empty (a file mid-swap is
// retried next tick), so that one appearing changes the hash.
func (g *Gateway) fileHash() [32]byte {
	h := sha256.New()
	files := []string{g.opts.ConfigPath}
	for _, r := range g.refs() {
		files = append(files, r.EnvFile, r.Pins)
		for _, d := range r.CardDirs {
			cards, _ := filepath.Glob(filepath.Join(d, "*.md"))
			files = append(files, cards...)
		}
	}
	sort.Strings(files)
	for _, p := range slices.Compact(files) {
		if p == "" {
			continue
		}
		b, _ := os.ReadFile(p)
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
