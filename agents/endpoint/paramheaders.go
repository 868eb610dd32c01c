package endpoint

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// paramHeadersRefused answers a 2026-07-28 tools/call of a tool of a
// ParamHeaderChecker whose Mcp-Param-* headers disagree with its arguments
// with -32020 (HTTP 400) and reports whether it did. mcp-go would check
// them against the tool's schema as registered, which for a proxied tool
// is a placeholder that binds none: the kind checks them against the
// bindings it knows (a proxy: the downstream tool's own).
func (e *Endpoint) paramHeadersRefused(w http.ResponseWriter, r *http.Request, msg *wire.Message) bool {
	p := e.params
	if p == nil || !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return false
	}
	name, ok := msg.Params.ToolName()
	if !ok {
		return false
	}
	err := p.CheckParamHeaders(name, r.Header, msg.RawParams)
	if err == nil {
		return false
	}
	wire.WriteError(w, wire.HTTPStatus(mcp.HEADER_MISMATCH), msg.ID, mcp.HEADER_MISMATCH, err.Error(), nil)
	return true
}
