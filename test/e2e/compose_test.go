//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestComposeConfig validates docker-compose.yml with docker-compose itself
// (v1 validates without a Docker engine): services, build context, volume
// paths and networks are well-formed, and the files it mounts exist.
func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose")
	file := filepath.Join(repoDir, "docker-compose.yml")
	cmd := exec.Command(compose, "-f", file, "config")
	cmd.Dir = repoDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	resolved := string(out)
	for _, want := range []string{"gateway:", "caddy:", "prometheus:", "everything:", ":/etc/pallasgw:ro"} {
		if !strings.Contains(resolved, want) {
			t.Errorf("resolved compose file lacks %q:\n%s", want, resolved)
		}
	}
	// Every bind-mounted host path must exist in the repository.
	for _, line := range strings.Split(resolved, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		src, _, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(src, repoDir) {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			t.Errorf("compose mounts %s, which does not exist", src)
		}
	}
}
