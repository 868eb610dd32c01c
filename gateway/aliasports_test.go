package gateway

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/gateway/config"
)

const aliasCfg = `name: t
listen: "127.0.0.1:8300"
registry_port: 8230
agents:
  echo: {model: passthrough, port: 8231}
  oracle: {model: passthrough, port: 8232}
  quiet: {model: passthrough}
`

// --alias-port-offset moves every legacy alias port by N, as --listen
// moves the main port; --no-alias-ports drops them; a moved port out of
// range or on another listener's port is refused at its key.
func TestMoveAliasPorts(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want map[string]int // "registry" and agent names → port
		err  string
	}{
		{"none", Options{}, map[string]int{"registry": 8230, "echo": 8231, "oracle": 8232, "quiet": 0}, ""},
		{"offset", Options{AliasPortOffset: 100}, map[string]int{"registry": 8330, "echo": 8331, "oracle": 8332, "quiet": 0}, ""},
		{"negative", Options{AliasPortOffset: -8000}, map[string]int{"registry": 230, "echo": 231, "oracle": 232, "quiet": 0}, ""},
		{"off", Options{NoAliasPorts: true}, map[string]int{"registry": 0, "echo": 0, "oracle": 0, "quiet": 0}, ""},
		{"onto listen", Options{AliasPortOffset: 70}, nil, "t.yaml:3: registry_port: port 8230 moved by --alias-port-offset 70 is 8300, already used by listen"},
		{"out of range", Options{AliasPortOffset: 60000}, nil, "t.yaml:3: registry_port: port 8230 moved by --alias-port-offset 60000 is 68230, out of range 1-65535"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("t.yaml", []byte(aliasCfg))
			if err != nil {
				t.Fatal(err)
			}
			err = tc.opts.moveAliasPorts(cfg)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{"registry": cfg.RegistryPort}
			for name, a := range cfg.Agents {
				got[name] = a.Port
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: port %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

// A gateway started with --no-alias-ports binds no legacy port and its
// status lists none, reloads included.
func TestNoAliasPortsBindsNone(t *testing.T) {
	path := t.TempDir() + "/pallasgw.yaml"
	if err := writeFile(path, strings.Replace(aliasCfg, "8300", "0", 1)); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{ConfigPath: path, NoAliasPorts: true, Logger: zap.NewNop(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() })
	if got := g.listeners.addrs(); len(got) != 0 {
		t.Errorf("legacy listeners %v, want none", got)
	}
	if err := writeFile(path, strings.Replace(aliasCfg, "8300", "0", 1)+"  more: {model: passthrough, port: 8233}\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reload("test"); err != nil {
		t.Fatal(err)
	}
	if got := g.listeners.addrs(); len(got) != 0 {
		t.Errorf("legacy listeners after a reload %v, want none", got)
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }
