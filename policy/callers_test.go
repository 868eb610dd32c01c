package policy

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pallasgw/pallasgw/metrics"
)

func TestGlobs(t *testing.T) {
	g, err := CompileGlobs([]string{"argos__*", "files__read_?", "[ab]x", "exact"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"star", "argos__search", true},
		{"star matches empty rest", "argos__", true},
		{"question mark", "files__read_a", true},
		{"question mark is one char", "files__read_ab", false},
		{"class", "bx", true},
		{"class miss", "cx", false},
		{"exact", "exact", true},
		{"whole name only", "exactly", false},
		{"star does not cross slash", "argos__a/b", false},
		{"case-sensitive", "ARGOS__search", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.Match(tt.in); got != tt.want {
				t.Errorf("Match(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
	t.Run("empty list matches nothing", func(t *testing.T) {
		var empty Globs
		if empty.Match("") || empty.Match("x") || !empty.Empty() {
			t.Error("empty Globs matched")
		}
	})
	t.Run("errors name the bad patterns", func(t *testing.T) {
		_, err := CompileGlobs([]string{"ok*", "[a-", "", "\\"})
		msg := err.Error()
		for _, want := range []string{`invalid glob "[a-"`, `invalid glob ""`, `invalid glob "\\"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, `"ok*"`) {
			t.Errorf("error %q names a good pattern", msg)
		}
	})
}

func TestToolFilter(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		tool        string
		want        bool
	}{
		{"empty allows all", nil, nil, "argos__anything", true},
		{"explicit empty allow allows all", []string{}, nil, "argos__anything", true},
		{"allow list", []string{"argos__search*"}, nil, "argos__search_web", true},
		{"not in allow list", []string{"argos__search*"}, nil, "argos__delete", false},
		{"deny wins over allow", []string{"argos__*"}, []string{"argos__admin_*"}, "argos__admin_drop", false},
		{"deny alone", nil, []string{"*__delete"}, "files__delete", false},
		{"deny alone lets others through", nil, []string{"*__delete"}, "files__read", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewToolFilter(tt.allow, tt.deny)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Allowed(tt.tool); got != tt.want {
				t.Errorf("Allowed(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}
	t.Run("zero value allows all", func(t *testing.T) {
		if !(ToolFilter{}).Allowed("x") {
			t.Error("zero ToolFilter denied")
		}
	})
	t.Run("errors say which list", func(t *testing.T) {
		_, err := NewToolFilter([]string{"["}, []string{"]["})
		if err == nil || !strings.Contains(err.Error(), `allow: invalid glob "["`) || !strings.Contains(err.Error(), `deny: invalid glob "]["`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestCallerPolicy(t *testing.T) {
	p, err := NewCallerPolicy(map[string]Rule{
		"web-ui": {
			Agents: []string{"research", "tech_*"}, Servers: []string{"argos"},
			ToolsAllow: []string{"argos__search*"}, ToolsDeny: []string{"argos__search_admin"},
		},
		"ops": {},
	}, &Rule{Agents: []string{"public_*"}, ToolsDeny: []string{"*__delete*"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	allow := func(rule string) Decision { return Decision{Allowed: true, Reason: ReasonAllowed, Rule: rule} }
	deny := func(r, rule string) Decision { return Decision{Reason: r, Rule: rule} }
	agentFilter, err := NewToolFilter([]string{"argos__*"}, []string{"argos__search_web"})
	if err != nil {
		t.Fatal(err)
	}
	agentFilter.Name = "agents.a.tools"
	const web, def = "policy.callers.web-ui.", "policy.default."
	tests := []struct {
		name string
		got  Decision
		want Decision
	}{
		{"listed caller, allowed agent", p.AllowAgent("web-ui", "research"), allow(web + "agents")},
		{"listed caller, glob agent", p.AllowAgent("web-ui", "tech_research"), allow(web + "agents")},
		{"listed caller, other agent", p.AllowAgent("web-ui", "writer"), deny(ReasonAgentNotAllowed, web+"agents")},
		{"listed caller does not inherit default", p.AllowAgent("web-ui", "public_faq"), deny(ReasonAgentNotAllowed, web+"agents")},
		{"listed caller, allowed server", p.AllowServer("web-ui", "argos"), allow(web + "servers")},
		{"listed caller, other server", p.AllowServer("web-ui", "files"), deny(ReasonServerNotAllowed, web+"servers")},
		{"tool allowed", p.AllowTool("web-ui", "argos", "search_web"), allow(web + "tools.allow")},
		{"tool denied wins", p.AllowTool("web-ui", "argos", "search_admin"), deny(ReasonToolDenied, web+"tools.deny")},
		{"tool not in allow", p.AllowTool("web-ui", "argos", "drop"), deny(ReasonToolNotAllowed, web+"tools.allow")},
		{"tool on a server not allowed", p.AllowTool("web-ui", "files", "search_x"), deny(ReasonServerNotAllowed, web+"servers")},
		{"empty rule allows all", p.AllowTool("ops", "files", "delete_all"), allow("")},
		{"empty rule, any agent", p.AllowAgent("ops", "writer"), allow("")},
		{"unlisted caller gets default", p.AllowAgent("stranger", "public_faq"), allow(def + "agents")},
		{"unlisted caller, default denies", p.AllowAgent("stranger", "research"), deny(ReasonAgentNotAllowed, def+"agents")},
		{"unlisted caller, default servers all", p.AllowServer("stranger", "files"), allow("")},
		{"unlisted caller, default tool deny", p.AllowTool("stranger", "files", "delete_x"), deny(ReasonToolDenied, def+"tools.deny")},
		{"agent filter denies first", p.DecideTool(agentFilter, "ops", "argos", "search_web"), deny(ReasonToolDenied, "agents.a.tools.deny")},
		{"agent filter allow list", p.DecideTool(agentFilter, "ops", "files", "read"), deny(ReasonToolNotAllowed, "agents.a.tools.allow")},
		{"agent filter passes, caller rule decides", p.DecideTool(agentFilter, "web-ui", "argos", "drop"), deny(ReasonToolNotAllowed, web+"tools.allow")},
		{"agent filter and caller rule allow", p.DecideTool(agentFilter, "web-ui", "argos", "search_x"), allow(web + "tools.allow")},
		{"agent filter alone allows", p.DecideTool(agentFilter, "ops", "argos", "search_x"), allow("agents.a.tools.allow")},
		{"empty caller gets default", p.AllowAgent("", "public_faq"), allow(def + "agents")},
		{"missing identity denied", p.MissingIdentity(""), deny(ReasonMissingIdentity, "policy.deny_on_missing_identity")},
		{"named identity present", p.MissingIdentity("stranger"), allow("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
}

// Label keeps the callers the config names and calls every other "other".
func TestCallerLabel(t *testing.T) {
	p, err := NewCallerPolicy(map[string]Rule{"web-ui": {}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p.NameCallers("ci-bot", "")
	for caller, want := range map[string]string{"web-ui": "web-ui", "ci-bot": "ci-bot", "": "other", "stranger": "other", "other": "other"} {
		if got := p.Label(caller); got != want {
			t.Errorf("Label(%q) = %q, want %q", caller, got, want)
		}
	}
	if (*CallerPolicy)(nil).Label("web-ui") != "other" {
		t.Error("a nil policy names a caller")
	}
}

func TestCallerPolicyDefaults(t *testing.T) {
	p, err := NewCallerPolicy(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Decision{
		p.AllowAgent("", "a"), p.AllowServer("x", "s"), p.AllowTool("x", "s", "t"), p.MissingIdentity(""),
	} {
		if !d.Allowed || d.Reason != ReasonAllowed {
			t.Errorf("nil default rule: got %+v, want allowed", d)
		}
	}
}

func TestCallerPolicyErrors(t *testing.T) {
	_, err := NewCallerPolicy(map[string]Rule{
		"b": {Agents: []string{"["}, ToolsDeny: []string{"x[", "y["}},
		"a": {Servers: []string{"\\"}},
		"":  {},
	}, &Rule{ToolsAllow: []string{"]["}}, false)
	if err == nil {
		t.Fatal("no error")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`callers: empty caller name`,
		`callers.a.servers: invalid glob "\\": syntax error in pattern`,
		`callers.b.agents: invalid glob "[": syntax error in pattern`,
		`callers.b.tools.deny: invalid glob "x[": syntax error in pattern`,
		`callers.b.tools.deny: invalid glob "y[": syntax error in pattern`,
		`default.tools.allow: invalid glob "][": syntax error in pattern`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors =\n  %q\nwant\n  %q", got, want)
	}
}

func TestAuditorRecord(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	m := metrics.New("test")
	callers, err := NewCallerPolicy(map[string]Rule{"web-ui": {}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	a := &Auditor{Logger: zap.New(core), Metrics: m, Callers: callers}
	ctx := WithIdentity(context.Background(), Identity{Caller: "web-ui", Authenticated: true})

	a.Record(ctx, AuditEvent{RequestID: "req-1", Agent: "gatekeeper", Server: "argos", Tool: "search",
		Decision: Decision{Reason: ReasonToolDenied, Rule: "policy.callers.web-ui.tools.deny"}, Latency: 1500 * time.Microsecond})
	a.Record(context.Background(), AuditEvent{RequestID: "req-2", Caller: "ops", Agent: "gatekeeper",
		Decision: Decision{Allowed: true, Reason: ReasonAllowed}})
	a.Record(context.Background(), AuditEvent{Agent: "gatekeeper", Decision: Decision{Reason: "Some free text: boom"}})
	a.Record(ctx, AuditEvent{RequestID: "req-4", Agent: "gatekeeper", Server: "argos", Tool: "search",
		Decision: Decision{Allowed: true, Reason: ReasonAllowed}, Outcome: OutcomeAllow, ResultBytes: 321})
	a.Record(ctx, AuditEvent{RequestID: "req-5", Agent: "gatekeeper", Server: "argos", Tool: "slow",
		Decision: Decision{Allowed: true, Reason: ReasonAllowed}, Outcome: AuditOutcome("timeout")})

	entries := logs.AllUntimed()
	if len(entries) != 5 {
		t.Fatalf("got %d log lines, want 5", len(entries))
	}
	if e := entries[0]; e.Level != zapcore.InfoLevel || e.Message != "policy decision" {
		t.Errorf("entry = %v %q", e.Level, e.Message)
	}
	want := map[string]any{
		"request_id": "req-1", "caller": "web-ui", "agent": "gatekeeper", "server": "argos", "tool": "search",
		"decision": "deny", "reason": "tool_denied", "rule": "policy.callers.web-ui.tools.deny", "outcome": "deny", "duration_ms": 1.5,
	}
	if got := entries[0].ContextMap(); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v\nwant %v", got, want)
	}
	if got := entries[1].ContextMap(); got["caller"] != "ops" || got["decision"] != "allow" || got["outcome"] != "allow" || got["rule"] != nil {
		t.Errorf("second line = %v", got)
	}
	if got := entries[3].ContextMap(); got["outcome"] != "allow" || got["result_bytes"] != int64(321) {
		t.Errorf("a tool's line after its call = %v", got)
	}
	if got := entries[4].ContextMap(); got["outcome"] != "timeout" || got["decision"] != "allow" {
		t.Errorf("a timed-out tool's line = %v", got)
	}
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"gatekeeper", "deny", "tool_denied", "web-ui"}, 1},
		{[]string{"gatekeeper", "allow", "allowed", "other"}, 1}, // ops is not in the config
		{[]string{"gatekeeper", "allow", "allowed", "web-ui"}, 2},
		{[]string{"gatekeeper", "deny", "other", "other"}, 1},
	} {
		if v := counterValue(t, m.PolicyDecisions, c.labels...); v != c.want {
			t.Errorf("policy_decisions%v = %v, want %v", c.labels, v, c.want)
		}
	}
	(&Auditor{}).Record(context.Background(), AuditEvent{}) // nil logger and metrics: no panic
}
