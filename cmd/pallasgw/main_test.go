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
