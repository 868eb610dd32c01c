package pins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// writeMu serialises the rewrites of this process; the lock file
// serialises them with other processes (another replica's console, the
// CLI).
var writeMu sync.Mutex

// Update rewrites the pins file at path with change applied, atomically
// and one writer at a time: it locks the file's directory (flock, which
// leaves nothing behind), reads the file again (another writer may have changed it since it was
// loaded), applies change, writes a temporary file beside it and renames
// it over the old one. A missing file starts empty (pins init).
func Update(path string, change func(*File) error) error {
	writeMu.Lock()
	defer writeMu.Unlock()
	unlock, err := lockFile(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("pins file %s: locking: %w", path, err)
	}
	defer unlock()
	f, err := Load(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err = &File{Servers: map[string]map[string]*Entry{}}, nil
	}
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	out, err := f.Marshal()
	if err != nil {
		return err
	}
	return replace(path, out)
}

// replace writes data to a temporary file in path's directory and renames
// it over path, so that a reader sees the old file or the new one, whole.
func replace(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("pins file %s: writing: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("pins file %s: syncing: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("pins file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pins file %s: replacing: %w", path, err)
	}
	return nil
}

// Writable reports why the pins file at path cannot be rewritten (a
// read-only mount such as a Kubernetes ConfigMap, permissions), or nil.
// Rewriting needs a new file in its directory and a rename there.
func Writable(path string) error {
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe.*")
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %w", dir, err)
	}
	name := probe.Name()
	probe.Close()
	os.Remove(name)
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symlink (a mounted ConfigMap?): rewriting it would replace the link", path)
	}
	return nil
}
