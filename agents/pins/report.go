package pins

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Log field keys of this package.
const (
	fieldServer     = "server"
	fieldTool       = "tool"
	fieldHash       = "hash"
	fieldPinnedHash = "pinned_hash"
	fieldKind       = "kind"
	fieldAction     = "action"
	fieldCheck      = "check"
	fieldDetail     = "detail"
)

// report writes the audit line and counts a definition seen for the first
// time that awaits a reviewer or fails a check; g.mu is held.
func (g *Guard) report(server string, o *observed) {
	if o.state == Approved || o.state == Rejected {
		return
	}
	key := server + "\x00" + o.def.Name + "\x00" + o.def.Hash
	if _, done := g.reported[key]; done {
		return
	}
	if len(g.reported) >= maxReported {
		clear(g.reported)
	}
	g.reported[key] = struct{}{}
	action := "served"
	if o.hidden {
		action = "hidden"
	}
	if o.state == Pending && o.kind != "checks" {
		pinned := ""
		if e := g.policy.Load().File.Lookup(server, o.def.Name); e != nil {
			pinned = e.Hash
		}
		g.log.Warn("tool definition awaits approval", zap.String(fieldServer, server), zap.String(fieldTool, o.def.Name),
			zap.String(fieldKind, o.kind), zap.String(fieldHash, o.def.Hash), zap.String(fieldPinnedHash, pinned), zap.String(fieldAction, action))
		if g.metrics != nil {
			g.metrics.ToolPinMismatches.WithLabelValues(server).Inc()
		}
	}
	for i, f := range o.findings {
		g.log.Warn("tool definition fails a check", zap.String(fieldServer, server), zap.String(fieldTool, o.def.Name),
			zap.String(fieldHash, o.def.Hash), zap.String(fieldCheck, f.Check), zap.String(fieldDetail, f.Detail), zap.String(fieldAction, action))
		// A definition counts once per check it fails, however many of
		// its texts or patterns fail it.
		if g.metrics != nil && !slices.ContainsFunc(o.findings[:i], func(p Finding) bool { return p.Check == f.Check }) {
			g.metrics.ToolCheckFailures.WithLabelValues(server, f.Check).Inc()
		}
	}
}

// countPending sets server's pending gauge; g.mu is held.
func (g *Guard) countPending(server string) {
	n := 0
	for _, o := range g.seen[server] {
		if o.state == Pending {
			n++
		}
	}
	g.setPending(server, n)
}

// setPending sets the gauge, or deletes the series for n < 0.
func (g *Guard) setPending(server string, n int) {
	if g.metrics == nil {
		return
	}
	if n < 0 {
		g.metrics.ToolPinsPending.DeleteLabelValues(server)
		return
	}
	g.metrics.ToolPinsPending.WithLabelValues(server).Set(float64(n))
}

// CheckCall says whether a call of server's tool may go ahead: nil, or an
// error wrapping ErrAwaitsApproval, ErrRejected or ErrUnseen (the tool was
// not in a list yet and the server's mode needs to know it: read the list
// and ask CheckListed). It costs a map lookup.
func (g *Guard) CheckCall(server, tool string) error {
	p := g.policy.Load()
	sp, ok := p.Servers[server]
	if !ok {
		return nil
	}
	g.mu.RLock()
	o := g.seen[server][tool]
	var st State
	var kind string
	if o != nil {
		st, kind = o.state, o.kind
		if !o.hidden {
			st = Approved // served: warn mode, or approved
		}
	}
	g.mu.RUnlock()
	switch {
	case o == nil && (sp.Pin == Enforce || sp.Checks.Refuse):
		return fmt.Errorf("tool %q of server %q: %w", tool, server, ErrUnseen)
	case o == nil || st == Approved:
		return nil
	case st == Rejected:
		return fmt.Errorf("tool %q of server %q: its definition was %w", tool, server, ErrRejected)
	}
	why := map[string]string{"new": "a new tool", "changed": "its definition changed", "checks": "its definition fails a check"}[kind]
	return fmt.Errorf("tool %q of server %q %w (%s)", tool, server, ErrAwaitsApproval, why)
}

// CheckListed is CheckCall after the server's list was read: a tool still
// unseen is not in the list, and in enforce mode is refused.
func (g *Guard) CheckListed(server, tool string) error {
	err := g.CheckCall(server, tool)
	if !errors.Is(err, ErrUnseen) {
		return err
	}
	if g.policy.Load().Servers[server].Pin == Enforce {
		return fmt.Errorf("tool %q of server %q is not in its tool list, so it %w", tool, server, ErrAwaitsApproval)
	}
	return nil
}

// Hidden returns the error a call of server's tool is refused with when
// the Guard hides it from the lists (awaiting approval, failing a check
// in refuse mode, or rejected), or nil when no list hid it (served, or
// never seen). It costs a map lookup.
func (g *Guard) Hidden(server, tool string) error {
	err := g.CheckCall(server, tool)
	if errors.Is(err, ErrAwaitsApproval) || errors.Is(err, ErrRejected) {
		return err
	}
	return nil
}

// PendingTool is a definition that awaits a reviewer, as /-/status, the
// console and the CLI show it.
type PendingTool struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Kind       string          `json:"kind"` // new | changed | checks
	Mode       Mode            `json:"mode"`
	Hidden     bool            `json:"hidden"`
	Hash       string          `json:"hash"`
	PinnedHash string          `json:"pinned_hash,omitempty"`
	Findings   []Finding       `json:"findings,omitempty"`
	SeenAt     time.Time       `json:"seen_at"`
	Definition json.RawMessage `json:"-"` // canonical
	Approved   json.RawMessage `json:"-"` // the pinned definition, canonical; nil for a new tool
}

// Pending lists what awaits a reviewer, by server and tool.
func (g *Guard) Pending() []PendingTool {
	p := g.policy.Load()
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []PendingTool
	for server, tools := range g.seen {
		for name, o := range tools {
			if o.state != Pending {
				continue
			}
			pt := PendingTool{Server: server, Tool: name, Kind: o.kind, Mode: p.Servers[server].Pin, Hidden: o.hidden,
				Hash: o.def.Hash, Findings: o.findings, SeenAt: o.at.UTC(), Definition: o.def.Canonical}
			if pt.Mode == "" {
				pt.Mode = Off
			}
			if e := p.File.Lookup(server, name); e != nil && e.Hash != "" {
				pt.PinnedHash, pt.Approved = e.Hash, e.Definition
			}
			out = append(out, pt)
		}
	}
	slices.SortFunc(out, func(a, b PendingTool) int { return strings.Compare(a.Server+"\x00"+a.Tool, b.Server+"\x00"+b.Tool) })
	return out
}

// Observed returns the latest definition of server's tool a list showed.
func (g *Guard) Observed(server, tool string) (Def, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	o := g.seen[server][tool]
	if o == nil {
		return Def{}, false
	}
	return o.def, true
}
