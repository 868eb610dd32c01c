package mcpclient

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// Downstream is the one downstream the agent kinds (proxy, toolbox, the
// tool loop, code mode) call: *Downstreams, a snapshot's view over the
// per-server Managers a Cache keeps warm across reloads, whose call guard
// (Options.Guard: the gateway's pins) checks every tools/call. *Manager is
// one too. It is an interface only so
// that tests can hand the kinds an in-memory fake
// (agents/internal/agenttest.FakeDown); every method is required, and no
// production code asks a Downstream what else it is (test/arch checks it).
// hdr is always the caller's outbound headers for server.
type Downstream interface {
	// Tools is server's tool list as hdr's credentials see it.
	Tools(ctx context.Context, server string, hdr http.Header) ([]mcp.Tool, error)
	// CallTool is one tools/call through mcp-go's client, typed.
	CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error)
	// CallToolRaw is CallTool with the result as the downstream sent it,
	// for the fast path's raw answer (agents/wire, raw.go). args is the
	// arguments object as JSON, or nil. With opts.Stream a large result may
	// be streamed from the downstream's body (RawResult.Streamed): the
	// caller copies it out (wire.BodyAnswer) or closes it.
	CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*RawResult, error)
	// CallToolJSON is CallTool with the arguments as JSON, as the tool
	// loop has them from the model (test/bench/README.md P17).
	CallToolJSON(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error)
	// Hidden says why the pins hide server's tool from its lists, or nil:
	// a call of a hidden name is refused with it, not as an unknown tool.
	Hidden(server, tool string) error
	// Probe checks that server answers (health).
	Probe(ctx context.Context, server string, hdr http.Header) error
	// SetLogLevel forwards a caller's logging/setLevel.
	SetLogLevel(ctx context.Context, server string, level mcp.LoggingLevel, hdr http.Header) error
	// Capabilities are what server declares.
	Capabilities(ctx context.Context, server string, hdr http.Header) (mcp.ServerCapabilities, error)
	// TaskRequest is one tasks/* request of server, params and result as
	// JSON.
	TaskRequest(ctx context.Context, server, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error)
	ListPrompts(ctx context.Context, server string, hdr http.Header) (*mcp.ListPromptsResult, error)
	// GetPrompt and ReadResource take the downstream's server-to-client
	// requests to relay (nil: refused).
	GetPrompt(ctx context.Context, server, name string, args map[string]string, hdr http.Header, relay *Relay) (*mcp.GetPromptResult, error)
	ListResources(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourcesResult, error)
	ListResourceTemplates(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourceTemplatesResult, error)
	ReadResource(ctx context.Context, server, uri string, hdr http.Header, relay *Relay) (*mcp.ReadResourceResult, error)
}

// CallOptions are what a tools/call takes of the caller's side besides
// its arguments.
type CallOptions struct {
	// Stream lets CallToolRaw return a large result streamed from the
	// downstream's response body (RawResult.Streamed; the caller's
	// wire.Call.Streams): the caller copies it out and closes it, and the
	// call's metrics and context last until then.
	Stream bool
	// Extras are members the request adds (CallExtras; CallToolRaw and
	// CallToolJSON only), or nil.
	Extras CallExtras
	// Relay takes the downstream's log messages and server-to-client
	// requests during the call to the caller, or is nil: none.
	Relay *Relay
}

// ExtrasOf are the members c's downstream tools/call adds
// (wire.Call.ExtraParams and ExtraMeta); zero when c is nil or adds none.
func ExtrasOf(c *wire.Call) CallExtras {
	if c == nil {
		return CallExtras{}
	}
	return CallExtras{Params: c.ExtraParams, Meta: c.ExtraMeta}
}

var (
	_ Downstream = (*Downstreams)(nil)
	_ Downstream = (*Manager)(nil)
)
