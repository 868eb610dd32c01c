package endpoint

// What the endpoint needs of an agent kind beyond a wire.Target: one small
// interface per capability, which a kind implements (agents/kinds/proxy asserts
// its own). The endpoint asks for a capability, never for a kind, as
// CoreDNS's server calls plugin.Handler and never asks which plugin it
// holds. Deps names the capabilities it is handed (SetLevel, Tasks); the
// others are optional interfaces of Deps.Rounds, looked up once in New, as
// net/http looks up an http.Flusher.

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// SetLevelAnswerer answers a session-based caller's logging/setLevel (id is
// its JSON-RPC id) in place of mcp-go (Deps.SetLevel).
type SetLevelAnswerer interface {
	AnswerSetLevel(w http.ResponseWriter, r *http.Request, id json.RawMessage, level mcp.LoggingLevel)
}

// TaskRouter routes the tasks extension's requests of an agent
// (Deps.Tasks; tasks.go). An error that is a *wire.CallerError is answered
// as the JSON-RPC error it names, any other as an internal error.
type TaskRouter interface {
	// SupportsTasks reports whether a server the caller may use declares
	// tasks; when none does, mcp-go answers the request.
	SupportsTasks(ctx context.Context, inbound http.Header) bool
	// Task answers tasks/get, tasks/result, tasks/cancel or tasks/list.
	Task(ctx context.Context, method string, params json.RawMessage, inbound http.Header) (json.RawMessage, error)
	// CallAsTask runs a task-augmented tools/call c (task: the caller's
	// task param).
	CallAsTask(ctx context.Context, c *wire.Call, task json.RawMessage) (json.RawMessage, error)
	ToolEnsurer
}

// ToolEnsurer is a target whose tools are registered on demand: Ensure
// registers the tool name for the caller of ctx (inbound: its headers)
// when its listing shows it, so that a call no listing preceded finds it.
// The endpoint calls it before a bridged or task-augmented tools/call.
type ToolEnsurer interface {
	Ensure(ctx context.Context, name string, inbound http.Header)
}

// ParamHeaderChecker is a target that checks the Mcp-Param-* headers of a
// 2026-07-28 tools/call itself, against bindings mcp-go's server does not
// know (a proxy's downstream tools): CheckParamHeaders returns the
// mismatch, answered -32020 (paramheaders.go), or nil.
type ParamHeaderChecker interface {
	CheckParamHeaders(name string, h http.Header, params json.RawMessage) error
}
