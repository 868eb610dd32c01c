package policy

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// An allowed request that runs nothing (initialize, tools/list) is audited
// at the listing level, everything else (calls, every refusal) at the call
// level: policy.audit, debug and info by default.
func TestAuditLevels(t *testing.T) {
	for _, c := range []struct {
		name          string
		listing, call zapcore.Level
		listingEvent  bool
		allowed       bool
		want          zapcore.Level
	}{
		{"allowed listing at debug", zapcore.DebugLevel, zapcore.InfoLevel, true, true, zapcore.DebugLevel},
		{"allowed call at info", zapcore.DebugLevel, zapcore.InfoLevel, false, true, zapcore.InfoLevel},
		{"refused listing at the call level", zapcore.DebugLevel, zapcore.InfoLevel, true, false, zapcore.InfoLevel},
		{"configured: listing info, calls warn", zapcore.InfoLevel, zapcore.WarnLevel, true, true, zapcore.InfoLevel},
		{"configured: calls warn", zapcore.InfoLevel, zapcore.WarnLevel, false, true, zapcore.WarnLevel},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			a := &Auditor{Logger: zap.New(core), ListingLevel: c.listing, CallLevel: c.call}
			a.Record(context.Background(), AuditEvent{Listing: c.listingEvent, Agent: "x", Decision: Decision{Allowed: c.allowed, Reason: "r"}})
			entries := logs.All()
			if len(entries) != 1 || entries[0].Level != c.want || entries[0].Message != "policy decision" {
				t.Fatalf("lines %+v, want one policy decision at %s", entries, c.want)
			}
		})
	}
	// Below the logger's level nothing is written; the decision is still made.
	core, logs := observer.New(zapcore.InfoLevel)
	(&Auditor{Logger: zap.New(core), ListingLevel: zapcore.DebugLevel}).Record(context.Background(),
		AuditEvent{Listing: true, Decision: Decision{Allowed: true}})
	if logs.Len() != 0 {
		t.Errorf("a debug audit line written at info: %v", logs.All())
	}
}

// The caller of an audit line: "anonymous" for a request with no identity
// (passthrough mode), the token's name, a toolbox's claimed agent_id.
func TestAuditCallerNamed(t *testing.T) {
	for _, c := range []struct {
		name   string
		ctx    context.Context
		caller string
		want   string
	}{
		{"passthrough, no identity", WithIdentity(context.Background(), Identity{}), "", "anonymous"},
		{"no identity in the context", context.Background(), "", "anonymous"},
		{"a token's name", WithIdentity(context.Background(), Identity{Caller: "web", Authenticated: true}), "", "web"},
		{"a claimed agent_id", context.Background(), "planner", "planner"},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			(&Auditor{Logger: zap.New(core)}).Record(c.ctx, AuditEvent{Caller: c.caller, Agent: "x", Decision: Decision{Allowed: true, Reason: "r"}})
			if e := logs.All(); len(e) != 1 || e[0].ContextMap()["caller"] != c.want {
				t.Fatalf("lines %+v, want caller %q", e, c.want)
			}
		})
	}
}
