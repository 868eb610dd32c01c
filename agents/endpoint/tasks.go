package endpoint

// tasks/* and task-augmented tools/call of an agent whose kind routes
// tasks (Deps.Tasks, a TaskRouter: a proxy agent's). The endpoint answers them
// itself when a server the caller may use declares tasks: mcp-go's server
// would look the task up in its own store. Otherwise they go to mcp-go,
// which answers method-not-found (tasks/*) or "does not support task
// augmentation" (tools/call with a task), as for any agent without tasks.

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// isTaskRequest reports a request of the tasks extension: tasks/get,
// tasks/result, tasks/cancel, tasks/list, or a tools/call with a task.
func isTaskRequest(method string, msg *wire.Message) bool {
	switch mcp.MCPMethod(method) {
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksCancel, mcp.MethodTasksList:
		return !wire.IsNull(msg.ID)
	case mcp.MethodToolsCall:
		return !wire.IsNull(msg.ID) && msg.ParamsRead() && !wire.IsNull(msg.Params.Task)
	}
	return false
}

// serveTask answers a task request when the caller's servers declare tasks,
// and reports whether it did (false: it wrote nothing).
func (e *Endpoint) serveTask(w http.ResponseWriter, r *http.Request, body []byte, msg *wire.Message, rs *requestState) bool {
	ctx := r.Context()
	if !rs.legacy && !modernHeadersMatch(r, msg) {
		return false // mcp-go answers the mismatch
	}
	if !e.d.Tasks.SupportsTasks(ctx, r.Header) {
		return false
	}
	status := func(code int) int {
		if rs.legacy {
			return http.StatusOK
		}
		switch code { // mcp-go's httpStatusForJSONRPCError
		case mcp.METHOD_NOT_FOUND:
			return http.StatusNotFound
		case mcp.INVALID_PARAMS:
			return http.StatusBadRequest
		}
		return http.StatusOK
	}
	method := msg.MethodName()
	var res json.RawMessage
	var err error
	if method == string(mcp.MethodToolsCall) {
		var req mcp.CallToolRequest
		if err := json.Unmarshal(body, &req); err != nil {
			writeRPCError(w, status(mcp.INVALID_PARAMS), msg.ID, mcp.INVALID_PARAMS, "params: "+err.Error())
			return true
		}
		req.Header = r.Header
		e.d.Tasks.Ensure(ctx, req.Params.Name, r.Header)
		if e.bridge != nil && e.paramHeadersRefused(w, r, msg) {
			return true
		}
		res, err = e.d.Tasks.CallAsTask(ctx, &wire.Call{Req: req, Sink: scopeOf(ctx).sink()}, msg.Params.Task)
	} else {
		params := msg.RawParams
		if wire.IsNull(params) {
			params = json.RawMessage(`{}`)
		}
		res, err = e.d.Tasks.Task(ctx, method, params, r.Header)
	}
	if err != nil {
		code := mcp.INTERNAL_ERROR
		var te *wire.CallerError
		if errors.As(err, &te) {
			code = te.Code
			if te.Status != 0 { // refused before it ran (the session store unavailable)
				if te.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(te.RetryAfter.Seconds())))
				}
				writeRPCError(w, te.Status, msg.ID, code, err.Error())
				return true
			}
		}
		writeRPCError(w, status(code), msg.ID, code, err.Error())
		return true
	}
	if !rs.legacy {
		res = wire.DecorateJSON(res, nil) // resultType; the task's own _meta
	}
	wire.WriteResult(w, msg.ID, res)
	return true
}

// modernHeadersMatch reports whether a 2026-07-28 request's standard
// headers (protocol version, Mcp-Method, Mcp-Name) agree with its body, as
// mcp-go checks them before it dispatches.
func modernHeadersMatch(r *http.Request, msg *wire.Message) bool {
	version := msg.MetaString(mcp.MetaKeyProtocolVersion)
	h := r.Header
	return h.Get(mcp.HeaderProtocolVersion) == version && mcp.IsValidProtocolVersion(version) &&
		mcp.ValidateStandardHeaders(h.Get, version, mcp.MCPMethod(msg.MethodName()), msg.RawParams) == nil
}
