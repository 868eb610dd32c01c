package proxy

// A tools/call of a name the caller's listing does not show because the
// server that would offer it cannot be reached (down, refusing the
// caller's credentials): not the caller's mistake, so it is answered as a
// call that fails downstream is, with an isError tool result (HTTP 200),
// not as an unknown name (-32602, HTTP 400 for a 2026-07-28 caller).

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// UnavailableError is Route's answer for a tool whose server is
// unavailable to this caller. The endpoint answers it with ToolResult.
type UnavailableError struct {
	Tool, Server string
	RequestID    string
	Err          error // why the server's listing failed
	self         mcp.Implementation
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("tool %q: server %s is unavailable: %v", e.Tool, e.Server, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable names the server and the tool, for the audit line of the
// refusal.
func (e *UnavailableError) Unavailable() (server, tool string) { return e.Server, e.Tool }

// ToolResult is the call's answer: an isError result naming the server,
// why it is unavailable and the request id; stamped for a 2026-07-28
// caller (modern) as every result is.
func (e *UnavailableError) ToolResult(modern bool) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("server %s is unavailable: %v (request id %s)", e.Server, e.Err, e.RequestID), modern, e.self)
}

// errorResult is an isError result of text, stamped with self for a
// 2026-07-28 caller (modern) as every result is.
func errorResult(text string, modern bool, self mcp.Implementation) *mcp.CallToolResult {
	res := mcp.NewToolResultError(text)
	if modern {
		wire.Decorate(res, self)
	}
	return res
}
