package gateway

import (
	"os"
	"testing"
)

const revertCfg = `
name: t
listen: "127.0.0.1:0"
agents:
  echo: {model: passthrough}
`

// A reload that finds the file reverted to the serving config after a bad
// edit is a success: the gauge and /-/status say so again.
func TestReloadRevertedIsSuccess(t *testing.T) {
	g := newTestGateway(t, revertCfg)
	write := func(s string) {
		if err := os.WriteFile(g.opts.ConfigPath, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok := func() (float64, bool) { return gaugeValue(g.metrics.ConfigLastReloadOK), g.lastReload.Load().OK }
	write(revertCfg + "  broken: {modle: x}\n")
	if _, err := g.Reload("test"); err == nil {
		t.Fatal("bad edit loaded")
	}
	if v, st := ok(); v != 0 || st {
		t.Fatalf("after a bad edit: gauge %v, status ok %v", v, st)
	}
	write(revertCfg)
	res, err := g.Reload("test")
	if err != nil || !res.Unchanged {
		t.Fatalf("revert: %+v %v", res, err)
	}
	if v, st := ok(); v != 1 || !st {
		t.Fatalf("after the revert: gauge %v, status ok %v", v, st)
	}
	if e := g.lastReload.Load().Error; e != "" {
		t.Fatalf("status keeps the error %q", e)
	}
}
