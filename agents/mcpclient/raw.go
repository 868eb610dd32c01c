package mcpclient

// A tools/call that returns the downstream's result as raw JSON (test/bench/README.md,
// P9: the downstream half of the proxy's fast path). Through mcp-go's
// client a result is decoded into mcp.CallToolResult (every content block
// parsed) and a proxy then encodes it again for its caller; that was most
// of the gateway's JSON work on a proxied call, and mcp-go's encoding also
// normalizes what it passes on (key order, unknown members dropped, large
// integers turned into floats). On a Streamable HTTP session the raw call
// is POSTed with the session's HTTP transport and headers and its answer
// (JSON or SSE) read by the wire package (wire.ClientCall; rawstream.go
// hands it the session), doing for the
// call what mcpclient does through mcp-go: the per-call timeout and the
// reconnect once on a lost session (do, run), progress by token, the
// call's log messages to its Relay (a raw reader knows which stream a
// message came on, so no call tag is needed), server-to-client requests
// answered through serverRequest, notifications/cancelled when the call's
// context ends, metrics, and mcp-go's error wording where the error is
// mcp-go's. Anything else (SSE or stdio servers, a session whose wire facts
// are unknown) takes mcp-go's path and its result is encoded once.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// RawResult is a tools/call result as the downstream sent it (wire's).
type RawResult = wire.RawResult

// wireInfo is what a raw call sends besides the session's headers: the
// session id and protocol version that client's initialize left.
type wireInfo struct {
	cli     *client.Client
	session string
	version string
	fixed   http.Header // wire.SessionHeader(session, version), shared by the session's calls
}

// noteWire records the wire facts of a freshly connected cli, for Streamable
// HTTP sessions only. Callers hold the connection lock.
func (s *session) noteWire(cli *client.Client, version string) {
	tr, ok := cli.GetTransport().(*transport.StreamableHTTP)
	if s.srv.spec.Transport != TransportHTTP || !ok || version == "" {
		s.wire.Store(nil)
		return
	}
	id := tr.GetSessionId()
	s.wire.Store(&wireInfo{cli: cli, session: id, version: version, fixed: wire.SessionHeader(id, version)})
}

// CallToolRaw is CallTool with the result as the downstream sent it. args
// is the arguments object as JSON (it is sent as it is) or nil. Errors,
// outcomes and metrics are CallTool's; a result with isError is not an
// error here.
func (m *Manager) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*RawResult, error) {
	ctx, c, err := m.beginTool(ctx, server, tool, args, hdr, onProgress, opts)
	if err != nil {
		return nil, err
	}
	defer c.done()
	var res *RawResult
	err = m.doHeld(ctx, server, callOp(tool), c.r.relay, hdr, &res, func(ctx context.Context, s *session, cli *client.Client) error {
		var err error
		if w := s.wire.Load(); w != nil && w.cli == cli && wire.Fast() {
			res, err = s.callRaw(ctx, cli, w, c.r)
		} else {
			res, err = s.callSent(ctx, cli, c.r)
		}
		return err
	})
	if err == nil && res.Streamed() {
		// Counted once it has been copied (or given up): its facts and
		// the copy's error are known then.
		res.OnClose(func(err error) { c.finish(err == nil && res.IsError, err) })
		return res, nil
	}
	c.finish(err == nil && res.IsError, err)
	if err != nil {
		if res != nil {
			res.Close()
		}
		return nil, err
	}
	return res, nil
}

// rawRequest is one raw tools/call as the caller asked for it.
type rawRequest struct {
	tool   string
	args   json.RawMessage
	token  string // progress token; "" for none
	relay  *Relay
	stream bool // CallOptions.Stream

	traceparent, tracestate string // the call span's W3C trace context, for _meta; "" for none
	extra                   CallExtras
}

// rawRequest is the request of a call of tool with args, with a progress
// token for onProgress (nil: none) and opts' Relay, members and
// Stream; done unregisters the token once the call has returned.
func (m *Manager) rawRequest(ctx context.Context, tool string, args json.RawMessage, onProgress ProgressFunc, opts CallOptions) (r rawRequest, done func()) {
	r = rawRequest{tool: tool, args: args, relay: opts.Relay, stream: opts.Stream, extra: opts.Extras}
	r.traceparent, r.tracestate = tracing.Context(ctx)
	if onProgress == nil {
		return r, func() {}
	}
	r.token, done = m.progress.register(onProgress)
	return r, done
}

// CallToolJSON is CallTool with the arguments as JSON (an object, sent as
// it is, or nil), for callers that have them so (the tool loop: a model's
// arguments). On a Streamable HTTP session it takes the raw path (test/bench/README.md,
// P17) and decodes the result as mcp-go's client decodes it, within the
// call, so that a result mcp-go refuses fails the call, named and counted
// as on CallTool. A result that asks for input (resultType input_required),
// which mcp-go's client answers by asking again with the input, is asked
// for again through mcp-go's client: by the protocol a first round that
// asks for input has not done the work. Other sessions take mcp-go's path.
func (m *Manager) CallToolJSON(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error) {
	return m.typedCall(ctx, server, tool, args, hdr, onProgress, opts, func(ctx context.Context, s *session, cli *client.Client, r rawRequest) (*mcp.CallToolResult, error) {
		w := s.wire.Load()
		if w == nil || w.cli != cli {
			return s.callTyped(ctx, cli, r)
		}
		rr, err := s.callRaw(ctx, cli, w, r)
		if err != nil {
			return nil, err
		}
		if rr.ResultType != string(mcp.ResultTypeInputRequired) {
			return mcp.ParseCallToolResult(&rr.JSON)
		}
		// A result that asks for input: mcp-go's client runs the rounds
		// (its multi round-trip loop: a server shedding load is asked
		// again after a pause).
		req, err := typedRequest(r)
		if err != nil {
			return nil, err
		}
		call, done := s.relayed(ctx, cli, r.relay)
		defer done()
		return call.CallTool(ctx, req)
	})
}

// typedRequest is r for mcp-go's client (its multi round-trip loop, which
// sends the rounds itself): r's one encoding (toolCall) decoded into
// mcp-go's type, with the arguments kept as they came (RawArguments) and
// of the caller's members only a task.
func typedRequest(r rawRequest) (mcp.CallToolRequest, error) {
	t := r
	t.extra = CallExtras{}
	if task := r.extra.task(); task != nil {
		t.extra = CallExtras{Params: map[string]json.RawMessage{"task": task}}
	}
	var req mcp.CallToolRequest
	tc := t.toolCall("")
	if err := json.Unmarshal(tc.ParamsJSON(), &req.Params); err != nil {
		return req, fmt.Errorf("the tools/call request: %w", err)
	}
	return req, nil
}

// callSent is a raw tools/call through mcp-go's transport (send), its
// result as the downstream sent it: the path of sessions the wire
// package's call does not serve (SSE, stdio) and of every session with the
// wire switch off. It sends what the raw call sends (the caller's extra
// params, a task, _meta).
func (s *session) callSent(ctx context.Context, cli *client.Client, r rawRequest) (*RawResult, error) {
	resp, err := s.send(ctx, cli, r.relay, r.params())
	if err != nil {
		return nil, err
	}
	return answerOf(resp.Result, resp.Error)
}

// params is r's tools/call params, as the raw call sends them (toolCall).
func (r rawRequest) params() json.RawMessage {
	tc := r.toolCall("")
	return tc.ParamsJSON()
}

// callRaw is one raw tools/call on the session of cli.
func (s *session) callRaw(ctx context.Context, cli *client.Client, w *wireInfo, r rawRequest) (*RawResult, error) {
	if tr, ok := cli.GetTransport().(*transport.StreamableHTTP); !ok || tr.GetSessionId() != w.session {
		// mcp-go's transport saw the session end (a 404 on another request
		// of this session): it would not send, and run reconnects.
		return nil, transport.NewError(fmt.Errorf("failed to send request: %w", transport.ErrSessionTerminated))
	}
	s.raiseLevel(ctx, cli, r.relay)
	// The cancellation goes out on the call's own context: the reader's
	// ends with the call either way (a streamed result's, when it is
	// closed).
	id := s.callID()
	res, err := s.callRawOn(ctx, w, id, r) // rawstream.go
	if err == nil && res.Streamed() {
		res.OnClose(func(error) { s.cancelIfEnded(ctx, cli, id) })
	} else {
		s.cancelIfEnded(ctx, cli, id)
	}
	return res, err
}

// callBody is the JSON-RPC request of r with id.
func callBody(id string, r rawRequest) []byte {
	tc := r.toolCall(id)
	return tc.Body()
}

// toolCall is r as the one builder of a downstream tools/call writes it
// (wire.ToolCallRequest), with id.
func (r rawRequest) toolCall(id string) wire.ToolCallRequest {
	req := wire.ToolCallRequest{ID: id, Tool: r.tool, Arguments: r.args,
		ProgressToken: r.token, Traceparent: r.traceparent, Tracestate: r.tracestate}
	req.Params, req.Meta = r.extra.Params, r.extra.Meta
	return req
}
