package main

import (
	"io"
	"strings"
	"testing"
)

// Asking for help is not an error: every command exits 0 on -h and --help,
// and 2 on a flag it does not know.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"", "serve", "validate", "chat", "import"} {
		for _, flag := range []string{"-h", "--help", "--no-such-flag"} {
			args := strings.Fields(cmd + " " + flag)
			want := 0
			if flag == "--no-such-flag" {
				want = 2
			}
			if cmd == "" && flag == "--no-such-flag" {
				continue // an unknown command, tested as such elsewhere
			}
			if got := run(args, io.Discard, io.Discard); got != want {
				t.Errorf("pallasgw %s exited %d, want %d", strings.Join(args, " "), got, want)
			}
		}
	}
}

// `pallasgw help` shows every chat flag a user needs to reach a proxy or a
// renamed message tool, and to resume a saved conversation.
func TestHelpNamesChatTool(t *testing.T) {
	var out strings.Builder
	run([]string{"help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "pallasgw chat     [--url URL] [--token T] [--tool NAME] [--history FILE] AGENT") {
		t.Errorf("help omits chat --tool or --history:\n%s", out.String())
	}
}
