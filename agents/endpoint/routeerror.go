package endpoint

// The answer to a tools/call that Deps.Route refuses: -32602 for a name
// the caller cannot call (HTTP 400 for a 2026-07-28 caller, as mcp-go
// answers INVALID_PARAMS), or, for a refusal that is no mistake of the
// caller's (a proxy's server that is down), the tool result the refusal
// carries, HTTP 200.

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// toolResulter is a Route refusal answered as a tool result (a proxy's
// server that is unavailable to the caller).
type toolResulter interface {
	ToolResult(modern bool) *mcp.CallToolResult
}

// answerRouteError writes the answer to a tools/call of id that Route
// refused with err; legacy: the caller is session-based.
func answerRouteError(w http.ResponseWriter, id json.RawMessage, legacy bool, err error) {
	var tr toolResulter
	if errors.As(err, &tr) {
		wire.WriteResult(w, id, tr.ToolResult(!legacy))
		return
	}
	status := http.StatusOK
	if !legacy {
		status = http.StatusBadRequest // mcp-go's httpStatusForJSONRPCError of INVALID_PARAMS
	}
	writeRPCError(w, status, id, mcp.INVALID_PARAMS, err.Error())
}
