package main

import (
	"io"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/gateway"
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

// chat goes where serve listens: $PALLASGW_URL, else $PALLASGW_LISTEN
// (which serve's --listen defaults to), else the quickstart's port.
func TestChatDefaultURL(t *testing.T) {
	for _, tc := range []struct{ url, listen, want string }{
		{"", "", "http://127.0.0.1:8200"},
		{"", "127.0.0.1:8300", "http://127.0.0.1:8300"},
		{"", "0.0.0.0:8300", "http://127.0.0.1:8300"},
		{"", ":8300", "http://127.0.0.1:8300"},
		{"", "[::1]:8300", "http://[::1]:8300"},
		{"http://gw.example:9000", "127.0.0.1:8300", "http://gw.example:9000"},
	} {
		t.Setenv("PALLASGW_URL", tc.url)
		t.Setenv("PALLASGW_LISTEN", tc.listen)
		if got := defaultURL(); got != tc.want {
			t.Errorf("PALLASGW_URL=%q PALLASGW_LISTEN=%q: %q, want %q", tc.url, tc.listen, got, tc.want)
		}
	}
}

// The quickstart drains nothing: no load balancer sends it calls, so
// Ctrl-C on make run stops at once instead of waiting out drain_delay.
func TestQuickstartStopsAtOnce(t *testing.T) {
	cfg, err := gateway.LoadConfig("../../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DrainDelay != 0 {
		t.Errorf("configs/quickstart.yaml: drain_delay %s, want 0", cfg.DrainDelay)
	}
}
