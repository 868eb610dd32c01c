package proxy

// A tools/call of a name the caller's listing does not show because tool
// pins hide it (agents/pins: new or changed and not approved, failing a
// check in refuse mode, or rejected): refused as a call of a hidden tool
// that is still registered is, with an isError tool result that names the
// tool and says it awaits approval (HTTP 200), not as an unknown name
// (-32602). Without this, which of the two a caller got depended on
// whether the tool had been listed before the change in the same config
// snapshot.

import (
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// HeldError is Route's answer for a tool the pins hide. The endpoint
// answers it with ToolResult.
type HeldError struct {
	Agent, RequestID string
	Err              error // wraps pins.ErrAwaitsApproval or pins.ErrRejected
	self             mcp.Implementation
}

func (e *HeldError) Error() string { return e.Err.Error() }

func (e *HeldError) Unwrap() error { return e.Err }

// ToolResult is the call's answer, worded as forward words a refused call
// of a registered tool; stamped for a 2026-07-28 caller (modern) as every
// result is.
func (e *HeldError) ToolResult(modern bool) *mcp.CallToolResult {
	return errorResult(fmt.Sprintf("%s: %v (request id %s)", e.Agent, e.Err, e.RequestID), modern, e.self)
}

// held is why the pins hide name (as this agent exposes it) from the
// lists of its server, or nil.
func (p *Proxy) held(name string) error {
	for _, srv := range p.d.Servers {
		tool, ok := name, true
		if p.prefix {
			tool, ok = strings.CutPrefix(name, srv+"__")
		}
		if !ok {
			continue
		}
		if err := p.d.Downstream.Hidden(srv, tool); err != nil {
			return err
		}
	}
	return nil
}
