package pins

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/metrics"
)

// Mode is a server's pin_tools setting.
type Mode string

// The pin_tools values.
const (
	Off     Mode = "off"
	Warn    Mode = "warn"
	Enforce Mode = "enforce"
)

// Bounds of what a Guard remembers: the tools of one server (downstream
// lists, which per-caller lists can make vary), and the definitions
// already reported (cleared when full: a definition may then be reported
// twice, never missed).
const (
	maxToolsPerServer = 10000
	maxReported       = 1 << 16
)

// ErrAwaitsApproval is wrapped by the error of a call refused because its
// tool's definition is new or changed and not approved, or fails a check
// in refuse mode. ErrRejected: a reviewer rejected it. ErrUnseen: the
// Guard has not seen the tool in a list yet (read the list, ask again).
var (
	ErrAwaitsApproval = errors.New("awaits approval")
	ErrRejected       = errors.New("rejected by a reviewer")
	ErrUnseen         = errors.New("not seen in a tool list yet")
)

// Audit reasons of a call the pins refused (the "policy decision" line).
const (
	ReasonAwaitsApproval = "tool_awaits_approval"
	ReasonRejected       = "tool_rejected"
)

// RefusalReason is the audit reason of a call refused with err, "" when
// the pins did not refuse it.
func RefusalReason(err error) string {
	switch {
	case errors.Is(err, ErrRejected):
		return ReasonRejected
	case errors.Is(err, ErrAwaitsApproval):
		return ReasonAwaitsApproval
	}
	return ""
}

// ServerPolicy is one server's pin mode and checks.
type ServerPolicy struct {
	Pin    Mode
	Checks Checks
}

// Policy is what one loaded config and pins file say: the pins file (nil
// when none is configured), its path, and each configured server's policy.
type Policy struct {
	Path    string
	File    *File
	Servers map[string]ServerPolicy
}

// State is where a tool definition stands.
type State string

// States of an observed definition.
const (
	Approved State = "approved" // its hash is the pinned one
	Unpinned State = "unpinned" // pin_tools off and no check refuses it
	Pending  State = "pending"  // awaits a reviewer (new, changed, or a refusing check)
	Rejected State = "rejected" // a reviewer turned this hash down
)

// observed is the latest definition of one tool a list showed.
type observed struct {
	def      Def
	findings []Finding
	state    State
	kind     string // pending: "new", "changed" or "checks"
	hidden   bool
	at       time.Time
}

// Guard applies pins and checks to the tool lists read from downstreams
// and to calls. One per gateway process; it outlives config snapshots and
// takes each one's Policy through SetPolicy.
type Guard struct {
	log      *zap.Logger
	metrics  *metrics.Metrics
	policy   atomic.Pointer[Policy]
	mu       sync.RWMutex
	seen     map[string]map[string]*observed // server → tool
	reported map[string]struct{}             // server, tool, hash (and check) already reported
}

// NewGuard returns a Guard with no policy: it passes every list as it is
// until SetPolicy. log and m may be nil.
func NewGuard(log *zap.Logger, m *metrics.Metrics) *Guard {
	if log == nil {
		log = zap.NewNop()
	}
	g := &Guard{log: log, metrics: m, seen: map[string]map[string]*observed{}, reported: map[string]struct{}{}}
	g.policy.Store(&Policy{})
	return g
}

// Policy returns the policy in force.
func (g *Guard) Policy() *Policy { return g.policy.Load() }

// SetPolicy puts p in force and decides again every definition already
// seen under it: an approval applies to the lists already read at once.
func (g *Guard) SetPolicy(p *Policy) {
	g.policy.Store(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	for server, tools := range g.seen {
		sp, ok := p.Servers[server]
		if !ok {
			delete(g.seen, server)
			g.setPending(server, -1)
			continue
		}
		for tool, o := range tools {
			g.decide(o, sp, p.File.Lookup(server, tool))
		}
		g.countPending(server)
	}
}

// Filter is called with every tool list read from server (tools decoded,
// raw as the server sent each one): it hashes and checks each definition,
// records and reports what is new, and returns the tools the list shows.
func (g *Guard) Filter(server string, tools []mcp.Tool, raw []json.RawMessage) []mcp.Tool {
	p := g.policy.Load()
	sp, ok := p.Servers[server]
	if !ok || len(raw) != len(tools) {
		return tools
	}
	out := tools[:0:0]
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, t := range tools {
		o := g.observe(server, sp, p.File, t.Name, raw[i])
		if o == nil || !o.hidden {
			out = append(out, t)
		}
	}
	g.countPending(server)
	return out
}

// observe records one definition of a list; g.mu is held.
func (g *Guard) observe(server string, sp ServerPolicy, f *File, name string, raw json.RawMessage) *observed {
	def, err := Definition(raw)
	o := &observed{def: def, at: time.Now()}
	if err != nil {
		o.def = Def{Name: name, Hash: "unreadable"}
		o.findings = []Finding{{Check: CheckPattern, Detail: err.Error()}}
	} else {
		o.findings = sp.Checks.Run(def.Canonical)
	}
	g.decide(o, sp, f.Lookup(server, name))
	tools := g.seen[server]
	if tools == nil {
		tools = map[string]*observed{}
		g.seen[server] = tools
	}
	if old := tools[name]; old != nil && old.def.Hash == o.def.Hash {
		old.at = o.at
		return old
	}
	if _, known := tools[name]; !known && len(tools) >= maxToolsPerServer {
		g.log.Warn("too many tools to track; this one is not recorded", zap.String(fieldServer, server), zap.String(fieldTool, name))
		return o
	}
	tools[name] = o
	g.report(server, o)
	return o
}

// decide sets o's state under sp and the tool's pin entry e (may be nil).
func (g *Guard) decide(o *observed, sp ServerPolicy, e *Entry) {
	o.kind, o.hidden = "", false
	switch {
	case e != nil && slices.Contains(e.Rejected, o.def.Hash):
		o.state, o.hidden = Rejected, true
		return
	case e != nil && e.Hash == o.def.Hash:
		o.state = Approved
		return
	}
	pinPending := sp.Pin != Off && sp.Pin != ""
	refused := len(o.findings) > 0 && sp.Checks.Refuse
	if !pinPending && !refused {
		o.state = Unpinned
		return
	}
	o.state, o.hidden = Pending, refused || sp.Pin == Enforce
	switch {
	case !pinPending:
		o.kind = "checks"
	case e == nil || e.Hash == "":
		o.kind = "new"
	default:
		o.kind = "changed"
	}
}
