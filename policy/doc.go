// Package policy owns every decision about who may call what and which
// credentials travel where:
//
//   - inbound authentication of callers (auth.mode passthrough | tokens) and
//     the admin guard, as net/http middleware;
//   - outbound header composition for downstream MCP servers and LLM
//     providers: static headers, the forward_headers allowlist,
//     forward_inbound_auth, the blocked-name list and value sanitising;
//   - glob matching for tool filters and per-caller rules;
//   - the audit line and metric of every policy decision.
//
// It is pure logic over plain Go values: it parses no config file (the
// caller maps its typed config onto Rule, HeaderRules, TokenSpec, ...),
// opens no connection and keeps no state across requests. Everything built
// here is immutable after construction and safe for concurrent use, so it
// can live in a config snapshot. It imports no project package but the
// leaves metrics and tracing.
//
// It must never log, return or count a secret: token values, header values
// (static or forwarded) and Authorization never appear in a log line, an
// error or a metric label.
package policy
