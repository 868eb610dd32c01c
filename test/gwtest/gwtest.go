// Package gwtest holds what every test that runs the real pallasgw binary
// needs: building it, free loopback ports, and a goroutine-safe buffer for a
// process's output. It is shared by test/integration, test/e2e, test/soak
// and test/bench; it starts nothing by itself.
package gwtest

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Build compiles cmd/pallasgw (repoRoot relative to the test's directory,
// e.g. "../..") into dir and returns the binary's path.
func Build(repoRoot, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "pallasgw")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, filepath.Join(repoRoot, "cmd", "pallasgw"))...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building pallasgw: %w\n%s", err, out)
	}
	return bin, nil
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// SyncBuffer collects a process's output; safe for concurrent use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
