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

// make run LISTEN=... moves the main port, ALIAS_PORT_OFFSET=... the
// legacy alias ports with it, NO_ALIAS_PORTS=1 turns them off.
func TestMakeRunPorts(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for vars, want := range map[string]string{
		"":                      "serve --config configs/quickstart.yaml --log-format console",
		"LISTEN=127.0.0.1:8300": "--log-format console --listen 127.0.0.1:8300",
		"LISTEN=127.0.0.1:8300 ALIAS_PORT_OFFSET=100": "--listen 127.0.0.1:8300 --alias-port-offset 100",
		"NO_ALIAS_PORTS=1":                            "--log-format console --no-alias-ports",
	} {
		args := append([]string{"-s", "-n", "-C", "../..", "run", "VERSION=v", "COMMIT=c"}, strings.Fields(vars)...)
		out, err := exec.Command("make", args...).Output()
		if err != nil {
			t.Fatalf("make -n run %s: %v", vars, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if last := lines[len(lines)-1]; !strings.HasSuffix(last, want) {
			t.Errorf("make run %s runs %q, want it to end %q", vars, last, want)
		}
	}
}
