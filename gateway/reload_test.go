package gateway

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
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

// seriesWith reports whether any series of the registry has label=value.
func seriesWith(t *testing.T, g *Gateway, label, value string) []string {
	t.Helper()
	mfs, err := g.metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					out = append(out, mf.GetName())
				}
			}
		}
	}
	return out
}

// Every per-agent, per-server and per-provider series goes when its agent,
// server or provider goes from the config.
func TestReloadForgetsRemovedSeries(t *testing.T) {
	f := newFakeProvider(t, true)
	withAll := `
name: t
listen: "127.0.0.1:0"
models:
  providers:
    openai: {base_url: "` + f.srv.URL + `/v1", api_key: k, max_retries: 0}
mcp:
  servers:
    files: {transport: http, url: "http://127.0.0.1:1/mcp"}
agents:
  keep: {model: passthrough}
  gone: {model: openai.m, servers: [files]}
`
	g := newTestGateway(t, withAll)
	s := g.current.Load()
	<-s.preflight.done
	s.agents.Get("gone").Health(t.Context(), nil)
	g.metrics.DownstreamCalls.WithLabelValues("files", "ok").Inc()
	for label, value := range map[string]string{"agent": "gone", "server": "files", "provider": "openai"} {
		if len(seriesWith(t, g, label, value)) == 0 {
			t.Fatalf("no series with %s=%q to begin with", label, value)
		}
	}
	if err := os.WriteFile(g.opts.ConfigPath, []byte(revertCfg+"  keep: {model: passthrough}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reload("test"); err != nil {
		t.Fatal(err)
	}
	for label, value := range map[string]string{"agent": "gone", "server": "files", "provider": "openai"} {
		waitFor(t, label+" "+value+" series deleted", func() bool { return len(seriesWith(t, g, label, value)) == 0 })
	}
	if len(seriesWith(t, g, "agent", "keep")) == 0 {
		t.Fatal("the kept agent's series went too")
	}
}

// A reload's log line names the tokens and allowed origins it changed
// (tokens by name: a token's value never appears).
func TestReloadNamesTokenAndOriginChanges(t *testing.T) {
	parse := func(tokens, origins string) *config.Config {
		cfg, err := config.Parse("t.yaml", []byte(`
name: t
allowed_origins: [`+origins+`]
auth:
  mode: tokens
  tokens:
`+tokens+`
agents:
  echo: {model: passthrough}
`))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	before := parse(`    - {name: alice, token: alice-secret-1111}
    - {name: bob, token: bob-secret-2222-22}
    - {name: carol, token: carol-secret-3333}`, `"https://a.example.com", "https://b.example.com"`)
	after := parse(`    - {name: alice, token: alice-secret-9999}
    - {name: bob, token: bob-secret-2222-22, agents: [echo]}
    - {name: dave, token: dave-secret-4444}`, `"https://a.example.com", "https://c.example.com"`)
	got := strings.Join(diff(before, after), "; ")
	for _, want := range []string{"token alice changed", "token bob changed", "token carol removed", "token dave added",
		"allowed origin https://b.example.com removed", "allowed origin https://c.example.com added"} {
		if !strings.Contains(got, want) {
			t.Errorf("changes %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "secret") || strings.Contains(got, "a.example.com") {
		t.Errorf("changes %q name a token value or an unchanged origin", got)
	}
}

// A reload that cannot apply a valid config names the file, the line and
// the key, as a load error does: a changed listen address, a legacy port
// another process holds (in the config file and in an agent card).
func TestReloadErrorsPlaced(t *testing.T) {
	g := newTestGateway(t, revertCfg)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	file := g.opts.ConfigPath
	cards := filepath.Join(filepath.Dir(file), "cards")
	if err := os.Mkdir(cards, 0o700); err != nil {
		t.Fatal(err)
	}
	card := filepath.Join(cards, "carded.md")
	if err := os.WriteFile(card, []byte(fmt.Sprintf("---\nname: carded\nmodel: passthrough\n\nport: %d\n---\nYou answer.\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, cfg, want string }{
		{"listen", "# moved\nname: t\n\nlisten: \"127.0.0.1:1\"\nagents:\n  echo: {model: passthrough}\n",
			file + ":4: listen: changing the main listen address needs a restart (serving 127.0.0.1:0)"},
		{"busy port", revertCfg + fmt.Sprintf("  other:\n    model: passthrough\n    port: %d\n", port),
			file + fmt.Sprintf(":8: agents.other.port: binding legacy port %d: ", port)},
		{"busy port of a card", revertCfg + "agent_cards: [cards]\n",
			card + fmt.Sprintf(":5: agents.carded.port: binding legacy port %d: ", port)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(c.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := g.Reload("test")
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("reload error:\n%v\nwant it to start with\n%s", err, c.want)
			}
			if st := g.lastReload.Load(); st.OK || !strings.HasPrefix(st.Error, c.want) {
				t.Errorf("last_reload %+v", st)
			}
		})
	}
}

// A reload's log line names the other top-level settings it changed, by
// key only, and none it did not.
func TestReloadNamesSettingChanges(t *testing.T) {
	parse := func(extra string) *config.Config {
		cfg, err := config.Parse("t.yaml", []byte(`
name: t
auth: {mode: tokens, tokens: [{name: alice, token: alice-secret-1111}]}
agents:
  echo: {model: passthrough}
`+extra))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	before := parse("limits: {max_body_bytes: 1000000}\n")
	after := parse("agents_endpoint: true\nlimits: {max_body_bytes: 2000000}\nadmin: {token: admin-secret-5555}\n")
	got := diff(before, after)
	want := []string{"setting admin changed", "setting limits changed", "setting agents_endpoint changed"} // in the config's order
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if got := diff(before, parse("limits: {max_body_bytes: 1000000}\n")); len(got) != 0 {
		t.Errorf("an equal config changed %q", got)
	}
}

// A reload that changes the policy names the caller rules added, removed
// and changed, and the default rule, by name; a rule that only moved in the
// file, or an unchanged policy, is not reported; the policy's other keys
// are "setting policy changed".
func TestReloadNamesPolicyRules(t *testing.T) {
	parse := func(policy string) *config.Config {
		cfg, err := config.Parse("t.yaml", []byte(`
name: t
auth:
  mode: tokens
  tokens: [{name: alice, token: alice-secret-1111}, {name: bob, token: bob-secret-2222-22}, {name: carol, token: carol-secret-3333}]
agents:
  echo: {model: passthrough}
  other: {model: passthrough}
policy:
`+policy))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	before := parse(`  callers:
    alice: {agents: [echo]}
    bob: {agents: [echo]}
    carol: {agents: [echo]}
  default: {agents: [echo]}
`)
	after := parse(`  callers:

    alice: {agents: [echo]}
    bob: {agents: [echo, other]}
    dave: {agents: [other]}
  default: {agents: [other]}
  deny_on_missing_identity: true
`)
	got := diff(before, after)
	want := []string{"policy rule bob changed", "policy rule carol removed", "policy rule dave added", "policy default changed", "setting policy changed"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if got := diff(before, before); len(got) != 0 {
		t.Errorf("an equal policy changed %q", got)
	}
}

// wire.fast is read at start: a reload that changes it applies the rest of
// the config, logs that a restart is needed, and keeps the running switch.
func TestReloadKeepsWireSwitch(t *testing.T) {
	t.Setenv(wire.EnvFast, "")
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	if err := os.WriteFile(path, []byte(revertCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	g, err := New(Options{ConfigPath: path, Logger: zap.New(core), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() }) // a test has no load balancer to drain from
	if !wire.Fast() {
		t.Fatal("wire.fast defaults to on")
	}
	if err := os.WriteFile(path, []byte(revertCfg+"wire: {fast: false}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Reload("test"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !wire.Fast() {
		t.Error("a reload changed the running switch")
	}
	if logs.FilterMessage("changing wire.fast needs a restart; the running process keeps its switch").Len() != 1 {
		t.Errorf("no restart warning; logs: %v", logs.All())
	}
}

// A reload after `pallasgw pins approve` or a rejection (the pins file
// rewritten, the config not) names the pins it changed, not "changes": [].
func TestReloadNamesPinChanges(t *testing.T) {
	dir := t.TempDir()
	path, pinsPath := filepath.Join(dir, "pallasgw.yaml"), filepath.Join(dir, "pins.yaml")
	if err := os.WriteFile(path, []byte(revertCfg+"pins: pins.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	def := func(desc string) pins.Def {
		d, err := pins.Definition([]byte(`{"name":"lookup","description":"` + desc + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := pins.Update(pinsPath, func(f *pins.File) error { f.Approve("dict", def("v1")); return nil }); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{ConfigPath: path, Logger: zap.NewNop(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.EndDrainDelay(); g.Shutdown() })
	steps := []struct {
		change func(*pins.File)
		want   []string
	}{
		{func(f *pins.File) { f.Approve("dict", def("v2")) }, []string{"pin dict/lookup changed"}},
		{func(f *pins.File) { f.Reject("files", "rm", def("x").Hash) }, []string{"pin files/rm added"}},
		{func(f *pins.File) { delete(f.Servers, "dict") }, []string{"pin dict/lookup removed"}},
	}
	for i, st := range steps {
		if err := pins.Update(pinsPath, func(f *pins.File) error { st.change(f); return nil }); err != nil {
			t.Fatal(err)
		}
		res, err := g.Reload("test")
		if err != nil {
			t.Fatalf("step %d: reload: %v", i, err)
		}
		if !slices.Equal(res.Changes, st.want) {
			t.Errorf("step %d: changes %q, want %q", i, res.Changes, st.want)
		}
	}
}

// A reload of a config whose agents and servers did not change names no
// change, whatever their fields hold: a toolbox's gateway_status (a
// pointer) and a server's token_exchange are compared by value.
func TestReloadUnchangedAgentsNotNamed(t *testing.T) {
	const cfg = `
name: t
listen: "127.0.0.1:0"
auth:
  mode: jwt
  jwt: {issuer: "https://idp.example.com", jwks_url: "http://127.0.0.1:1/jwks"}
mcp:
  servers:
    files:
      url: "http://127.0.0.1:1/mcp"
      headers: {X-Api-Key: key-secret-1111}
      token_exchange: {token_url: "http://127.0.0.1:1/token", client_id: gw, audience: files, scopes: [read]}
agents:
  tb: {kind: toolbox, servers: [files], gateway_status: {enabled: true, callers: ["ops-*"]}}
  echo: {model: passthrough, params: {stop: ["x"]}}
`
	g := newTestGateway(t, cfg)
	for i := range 3 {
		// A comment changes the file's hash, not its content: the
		// gateway reloads and must find nothing changed.
		if err := os.WriteFile(g.opts.ConfigPath, fmt.Appendf(nil, "%s# edit %d\n", cfg, i), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := g.Reload("test")
		if err != nil {
			t.Fatal(err)
		}
		if res.Unchanged || len(res.Changes) != 0 {
			t.Fatalf("reload %d of an unchanged config: unchanged %v, changes %q; want a reload with no change", i, res.Unchanged, res.Changes)
		}
	}
}
