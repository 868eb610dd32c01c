package main

import (
	"os/exec"
	"strings"
	"testing"
)

// make run builds the binary make build does (same command, so one build
// cache serves both) and runs it: no `go run`, whose flags differ from the
// build's (-trimpath) and compiled everything a second time.
func TestMakeRunBuildsOnce(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dry := func(target string) []string {
		out, err := exec.Command("make", "-s", "-n", "-C", "../..", target, "VERSION=v", "COMMIT=c").Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", target, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	build, run := dry("build"), dry("run")
	if len(build) != 1 || !strings.Contains(build[0], "go build") {
		t.Fatalf("make build runs %q, want one go build", build)
	}
	if len(run) != 2 || run[0] != build[0] || !strings.HasPrefix(run[1], "./bin/pallasgw serve") {
		t.Errorf("make run runs %q, want %q then ./bin/pallasgw serve", run, build[0])
	}
	for _, line := range run {
		if strings.Contains(line, "go run") {
			t.Errorf("make run compiles apart from make build: %q", line)
		}
	}
}
