package gateway

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// ReloadResult is what one reload did.
type ReloadResult struct {
	Hash      string   `json:"config_hash"`
	Unchanged bool     `json:"unchanged,omitempty"`
	Changes   []string `json:"changes,omitempty"`
}

// Reload loads the config file again and, when it is valid and different,
// swaps in a new snapshot. Any failure leaves the serving snapshot as it
// was. Reloads are serialised.
func (g *Gateway) Reload(trigger string) (ReloadResult, error) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	cfg, err := LoadConfig(g.opts.ConfigPath)
	if err == nil && g.opts.Listen != "" {
		cfg.Listen = g.opts.Listen
	}
	if err == nil {
		err = g.opts.moveAliasPorts(cfg)
	}
	old := g.current.Load()
	if err == nil && cfg.Hash == old.cfg.Hash {
		g.metrics.ConfigReloads.WithLabelValues("unchanged").Inc()
		if last := g.lastReload.Load(); last == nil || !last.OK {
			// A bad edit reverted: the file is the serving config again,
			// which loaded, so the last reload succeeded.
			g.recordReload(trigger, cfg.Hash, nil)
			g.noteReload(nil)
			g.log.Info("config reverted to the serving config", zap.String("trigger", trigger), zap.String("config_hash", cfg.Hash))
			return ReloadResult{Hash: cfg.Hash, Unchanged: true}, nil
		}
		log := g.log.Debug // a watcher's event for an unchanged file is routine
		if trigger == "sighup" || trigger == "api" {
			log = g.log.Info // an operator asked: say what happened
		}
		log("config unchanged; nothing to reload", zap.String("trigger", trigger), zap.String("config_hash", cfg.Hash))
		g.noteReload(nil)
		return ReloadResult{Hash: cfg.Hash, Unchanged: true}, nil
	}
	if err == nil && cfg.Listen != old.cfg.Listen {
		err = cfg.ErrorAt([]string{"listen"}, "changing the main listen address needs a restart (serving "+old.cfg.Listen+")")
	}
	if err == nil {
		err = g.apply(cfg, trigger)
	}
	if err != nil {
		g.recordReload(trigger, old.cfg.Hash, err)
		g.noteReload(attemptedRefs(cfg, err)) // watch.go: a missing file it names is waited for
		g.log.Error("config reload failed; keeping the serving config", zap.String("trigger", trigger),
			zap.String("config_hash", old.cfg.Hash), zap.String("error", err.Error()))
		var ce *config.Errors
		if errors.As(err, &ce) {
			for _, w := range ce.Warnings { // the file's other findings, with its errors
				g.log.Warn(w)
			}
			for _, s := range ce.Infos {
				g.log.Info(s)
			}
		}
		return ReloadResult{Hash: old.cfg.Hash}, err
	}
	if cfg.Sessions.Store != old.cfg.Sessions.Store {
		g.log.Warn("changing sessions.store needs a restart; the running process keeps its store", zap.String("trigger", trigger))
	}
	if !sameCredentials(cfg.Credentials, old.cfg.Credentials) && g.upstream.Load() != nil {
		g.log.Warn("changing credentials needs a restart; the running process keeps the key it seals callers' upstream tokens with", zap.String("trigger", trigger))
	}
	if cfg.Wire.Fast != old.cfg.Wire.Fast {
		g.log.Warn("changing wire.fast needs a restart; the running process keeps its switch",
			zap.String("trigger", trigger), zap.Bool("wire_fast", wire.Fast()))
	}
	g.noteReload(nil)
	changes := append(diff(old.cfg, cfg), pinChanges(old.pins, g.current.Load().pins)...)
	g.log.Info("config reloaded", zap.String("trigger", trigger), zap.String("config_hash", cfg.Hash), zap.Strings("changes", changes))
	return ReloadResult{Hash: cfg.Hash, Changes: changes}, nil
}

// apply builds a snapshot for cfg, binds its new legacy ports, swaps it in
// and retires the old one. On error nothing changed.
func (g *Gateway) apply(cfg *config.Config, trigger string) error {
	for _, w := range cfg.Warnings {
		g.log.Warn(w)
	}
	for _, s := range cfg.Infos { // findings that need no change
		g.log.Info(s)
	}
	if g.opts.Agent != "" {
		if err := keepAgent(cfg, g.opts.Agent); err != nil {
			return err
		}
	}
	s, err := g.buildSnapshot(cfg)
	if err != nil {
		if errors.As(err, new(config.Error)) {
			return err
		}
		return fmt.Errorf("%s: building: %w", cfg.File, err)
	}
	host, _, _ := net.SplitHostPort(cfg.Listen)
	added, err := g.listeners.bind(host, s.ports)
	if err != nil {
		s.retire()
		var be *bindError
		if errors.As(err, &be) {
			return cfg.ErrorAt(s.ports[be.port].key(), err.Error())
		}
		return fmt.Errorf("%s: %w", cfg.File, err)
	}
	g.callerReqs.Configure(stateKey(cfg), g.metrics)
	g.pins.SetPolicy(s.pins) // nothing fails past this point
	g.upstreamApplied(s)
	old := g.current.Swap(s)
	g.listeners.commit(added, s.ports)
	if old != nil {
		old.retire()
	}
	g.recordReload(trigger, cfg.Hash, nil)
	for _, name := range s.agents.Names() {
		g.metrics.Inflight.WithLabelValues(name) // the series exists before the first call
	}
	s.preflight.start(g, s.done)
	g.startHealthLoop(s)
	return nil
}

// recordReload publishes a load's outcome: metrics, last_reload and the
// ring of recent results in /-/status. hash is the config serving after it.
func (g *Gateway) recordReload(trigger, hash string, err error) {
	st := &reloadStatus{At: time.Now().UTC(), OK: err == nil, Trigger: trigger, ConfigHash: hash}
	if st.OK {
		g.metrics.ConfigReloads.WithLabelValues("success").Inc()
		g.metrics.ConfigLastReloadOK.Set(1)
		g.metrics.ConfigLastReloadSuccTS.SetToCurrentTime()
	} else {
		st.Error = err.Error()
		g.metrics.ConfigReloads.WithLabelValues("failure").Inc()
		g.metrics.ConfigLastReloadOK.Set(0)
	}
	g.lastReload.Store(st)
	g.reloads.add(*st)
}

// diff names the agents and servers added, removed and changed.
func diff(a, b *config.Config) []string {
	var out []string
	// By value, through pointers (gateway_status, token_exchange): printing
	// them compared addresses, and every reload named them changed.
	out = append(out, diffMap("agent", a.Agents, b.Agents, func(x, y *config.Agent) bool { return reflect.DeepEqual(*x, *y) })...)
	out = append(out, diffMap("server", a.MCP.Servers, b.MCP.Servers, func(x, y *config.Server) bool { return reflect.DeepEqual(*x, *y) })...)
	// Tokens by name, never by value: "token alice changed" says that its
	// value or its agents changed, not to what.
	out = append(out, diffMap("token", tokensByName(a.Auth.Tokens), tokensByName(b.Auth.Tokens), func(x, y config.Token) bool {
		return x.Token.Value() == y.Token.Value() && slices.Equal(x.Agents, y.Agents)
	})...)
	// Origins are addresses, not secrets: named.
	set := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, o := range list {
			m[o] = true
		}
		return m
	}
	out = append(out, diffMap("allowed origin", set(a.AllowedOrigins), set(b.AllowedOrigins), func(_, _ bool) bool { return true })...)
	return append(out, settingsChanged(a, b)...)
}

// settingsChanged names the other top-level keys whose value changed
// ("setting models changed"): by key, never by value.
func settingsChanged(a, b *config.Config) []string {
	// Named above, item by item.
	listed := func(c *config.Config) (config.Auth, config.MCP) {
		auth, mcp := c.Auth, c.MCP
		auth.Tokens, mcp.Servers = nil, nil
		return auth, mcp
	}
	aAuth, aMCP := listed(a)
	bAuth, bMCP := listed(b)
	var out []string
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i, f := range reflect.VisibleFields(va.Type()) {
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		var x, y any
		switch key {
		case "", "-", "agents", "allowed_origins":
			continue
		case "policy":
			out = append(out, policyChanges(a.Policy, b.Policy)...)
			continue
		case "auth":
			x, y = aAuth, bAuth
		case "mcp":
			x, y = aMCP, bMCP
		default:
			x, y = va.Field(i).Interface(), vb.Field(i).Interface()
		}
		if !reflect.DeepEqual(x, y) {
			out = append(out, "setting "+key+" changed")
		}
	}
	return out
}

// policyChanges names the policy.callers rules added, removed and changed
// ("policy rule alice changed"), "policy default changed", and "setting
// policy changed" for the policy's other keys: rules by name, never by
// content (they hold no secret, but a match may hold a person's claims).
// A rule that only moved in the file has not changed.
func policyChanges(a, b config.Policy) []string {
	out := diffMap("policy rule", a.Callers, b.Callers, sameRule)
	if !sameRule(a.Default, b.Default) {
		out = append(out, "policy default changed")
	}
	a.Callers, b.Callers, a.Default, b.Default = nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		out = append(out, "setting policy changed")
	}
	return out
}

// sameRule compares two rules but for where they stand in the file.
func sameRule(x, y *config.Rule) bool {
	if x == nil || y == nil {
		return x == y
	}
	cx, cy := *x, *y
	cx.Line, cy.Line = 0, 0
	return reflect.DeepEqual(cx, cy)
}

// tokensByName keys auth.tokens by name (validation keeps names unique; a
// repeated one is keyed by its position too, so that no change is lost).
func tokensByName(list []config.Token) map[string]config.Token {
	m := make(map[string]config.Token, len(list))
	for i, t := range list {
		name := t.Name
		if _, dup := m[name]; dup {
			name = fmt.Sprintf("%s#%d", t.Name, i)
		}
		m[name] = t
	}
	return m
}

func diffMap[V any](kind string, a, b map[string]V, same func(x, y V) bool) []string {
	var out []string
	for name, y := range b {
		x, ok := a[name]
		switch {
		case !ok:
			out = append(out, kind+" "+name+" added")
		case !same(x, y):
			out = append(out, kind+" "+name+" changed")
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			out = append(out, kind+" "+name+" removed")
		}
	}
	sort.Strings(out)
	return out
}

var _ = strings.TrimSpace

// maxReloadHistory bounds the recent reload results /-/status lists.
const maxReloadHistory = 20

// reloadRing is the last maxReloadHistory load results, oldest first.
type reloadRing struct {
	mu   sync.Mutex
	list []reloadStatus
}

func (r *reloadRing) add(st reloadStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == maxReloadHistory {
		r.list = append(r.list[:0], r.list[1:]...)
	}
	r.list = append(r.list, st)
}

func (r *reloadRing) snapshot() []reloadStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reloadStatus{}, r.list...)
}

// stateKey is the key that seals requestState: state_key, else
// PALLASGW_STATE_KEY, else nil (the process keeps its random one). Both are
// validated as 32 bytes of base64 (config validation; a bad variable is
// ignored with the random key kept).
func stateKey(cfg *config.Config) []byte {
	text := cfg.StateKey
	if text == "" {
		text = os.Getenv("PALLASGW_STATE_KEY")
	}
	if k, err := base64.StdEncoding.DecodeString(text); err == nil && len(k) == 32 {
		return k
	}
	return nil
}
