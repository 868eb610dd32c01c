//go:build unix

package pins

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock) on path, an existing
// file or directory (the pins file's: a lock file beside it would be left
// behind, and removing it after use races with the next writer's open);
// the lock ends with the returned function or the process.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
