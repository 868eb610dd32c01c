// Package gwtest holds what every test that runs the real pallasgw binary
// needs: building it, free loopback ports, and a goroutine-safe buffer for a
// process's output. It is shared by test/integration, test/e2e, test/soak
// and test/bench; it starts nothing by itself.
package gwtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// FreePorts returns n distinct free TCP ports on 127.0.0.1. They are taken
// below the kernel's ephemeral range: a port the kernel hands out (":0") can
// be handed out again as the source port of any outgoing connection the
// moment it is closed, and tests close and reopen these ports (legacy ports
// across reloads), while other tests of the package open connections.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	low := ephemeralLow()
	var ls []net.Listener
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		addr := "127.0.0.1:0" // the fallback
		if tries < 1000 && low > minPort {
			addr = fmt.Sprintf("127.0.0.1:%d", minPort+rand.IntN(low-minPort))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if tries < 1000 {
				continue // taken: try another
			}
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

// minPort is the lowest port FreePorts picks: above the well-known and most
// registered services' ports.
const minPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux),
// or 0 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(f[0])
	return low
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
