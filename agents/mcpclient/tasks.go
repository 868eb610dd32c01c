package mcpclient

// Requests of the tasks extension (tasks/get, tasks/result, tasks/cancel,
// tasks/list) sent on the session of an outbound header set, as a
// tools/call is: the same pooled session, the same per-call timeout, the
// same reconnect once on a lost session. A task lives in the downstream
// session that created it when the downstream is session-based (mcp-go
// keys its tasks by session id): once that session is gone (expired from
// the pool, replaced after a lost connection, or another replica's), the
// downstream answers "task not found", and that answer is what the caller
// gets. A stateless downstream keeps its tasks whatever session asks.

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TaskRequest sends one tasks/* request with params (a JSON object, sent as
// it is) to server on the session of hdr and returns the downstream's result
// as it sent it. A downstream's JSON-RPC error comes back as an *RPCError
// with its code and message.
func (m *Manager) TaskRequest(ctx context.Context, server, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	start := time.Now()
	var res json.RawMessage
	err := m.do(ctx, server, method, hdr, func(ctx context.Context, _ *session, cli *client.Client) error {
		id := requestID("task", m.callSeq.Add(1))
		resp, err := cli.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: params})
		if err != nil {
			return err
		}
		if resp.Error != nil {
			return answeredError{Err: &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}}
		}
		if len(resp.Result) == 0 {
			return errNoResult
		}
		res = resp.Result
		return nil
	})
	m.observe(server, start, false, err) // pallasgw_downstream_calls_total, as a tools/call
	return res, err
}
