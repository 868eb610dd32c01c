package gwtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Redis is a redis-server (Debian's; .ci/install-e2e-tools installs it)
// on a free loopback port, without persistence, which a test can stop and
// start again on that port (a store going down and coming back).
type Redis struct {
	t    testing.TB
	bin  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
}

// StartRedis runs redis-server until the test ends. Without it the test
// skips, or fails under PALLASGW_E2E_REQUIRE=1.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("PALLASGW_E2E_REQUIRE") == "1" {
			t.Fatal("redis-server is required: ", err)
		}
		t.Skip("redis-server not installed (.ci/install-e2e-tools installs it)")
	}
	r := &Redis{t: t, bin: bin, port: FreePorts(t, 1)[0]}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the server's redis:// URL.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// Start starts the server (again) and waits until it listens.
func (r *Redis) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.bin, "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.cmd = cmd
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("redis-server did not start: ", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (a no-op when it is not running).
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}
