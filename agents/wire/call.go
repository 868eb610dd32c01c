package wire

import (
	"github.com/mark3labs/mcp-go/mcp"
)

// Call is one tools/call as the server side hands it to the kind that
// answers it (Target.Answer): the caller's request, its JSON-RPC id and
// protocol, and the multi round-trip members it carries. What a call
// carries as behaviour travels here, not in its context; the caller's
// identity, trace, deadline and request id stay in the context
// (request-scoped data).
type Call struct {
	Req    mcp.CallToolRequest
	ID     any  // the JSON-RPC id (numbers as float64, as mcp-go decodes them)
	Modern bool // a 2026-07-28 caller
	// RoundTrip is a 2026-07-28 call's multi round-trip members as the
	// caller sent them (a RoundTripTarget's), or nil when it carries
	// none.
	RoundTrip *RoundTrip
}
