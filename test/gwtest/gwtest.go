// Package gwtest holds what every test that runs the real pallasgw binary
// needs: building it once per test binary, free loopback ports, and a
// Gateway: one `pallasgw serve` process started on a config, waited for
// until /readyz answers, stopped (SIGTERM, bounded wait, kill) when the test
// ends, with its log and its /metrics at hand. It is shared by
// test/integration, test/e2e, test/soak and test/bench, which keep their own
// extras (CPU readers, tool lookups, soak checks) in their packages. It
// imports nothing of the gateway: it only runs the binary.
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

// mainPkg is the gateway's main package; `go build` finds it from any
// directory of the module, which is where `go test` runs a test binary.
const mainPkg = "github.com/pallasgw/pallasgw/cmd/pallasgw"

// Build compiles cmd/pallasgw into dir, with the race detector when race is
// set, and returns the binary's path.
func Build(dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "pallasgw")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, mainPkg)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building pallasgw: %w\n%s", err, out)
	}
	return bin, nil
}

// BuildTemp builds the binary into a new temporary directory; cleanup
// removes it. For a TestMain that builds only sometimes (test/bench).
func BuildTemp(race bool) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "pallasgw-test")
	if err != nil {
		return "", nil, err
	}
	if bin, err = Build(dir, race); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// built is the binary Main built, the one Start runs by default.
var built string

// Main is the TestMain of a package whose tests start gateways: it builds
// the binary once (race-enabled when race is set), runs the tests, removes
// the binary and exits with the tests' code. A build failure ends the run
// with exit code 1 and the compiler's output.
func Main(m *testing.M, race bool) {
	bin, cleanup, err := BuildTemp(race)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	built = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Binary is the path of the binary Main built ("" without Main), for tests
// that run other subcommands (validate).
func Binary() string { return built }

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
