package proxy

// What a proxy agent relays between a downstream and its caller besides
// results and progress (see proxy.go): the caller's log level, the
// downstream's log messages and its server-to-client requests.
//
//   - logging/setLevel from a session-based caller is answered by the
//     endpoint (agents/endpoint) and forwarded to the downstream session of each
//     server the caller may use. Downstream sessions are pooled per outbound
//     header set (agents/mcpclient), so callers that send the same
//     credentials share one level: the last one set wins. A 2026-07-28
//     caller states its level per request; its calls raise the downstream
//     session's verbosity to that level if needed and its relay filters.
//   - Log messages a downstream sends on a call's response stream are
//     relayed to that call's caller as notifications/message, in order with
//     the call's progress (Streamable HTTP downstreams only: see
//     mcpclient.Relay).
//   - An elicitation/create, sampling/createMessage or roots/list a
//     downstream sends during a call goes to the caller on the call's
//     response stream, sent by the endpoint itself (Deps.Request, agents' endpoint.request:
//     mcp-go (v1.2.1) would send sampling and roots only on a standalone GET
//     stream, which a stateless endpoint does not offer, and routes
//     elicitation answers by session id alone), when the caller can answer
//     it; otherwise the downstream gets an error that says why.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/relay"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

// setLevelTimeout bounds forwarding one logging/setLevel.
const setLevelTimeout = 5 * time.Second

// AnswerSetLevel answers a session-based caller's logging/setLevel (id is
// its JSON-RPC id) after forwarding level to the downstream servers the
// caller may use, in parallel. A downstream that fails is logged; the
// caller's request still succeeds, as it would against mcp-go.
func (p *Proxy) AnswerSetLevel(w http.ResponseWriter, r *http.Request, id json.RawMessage, level mcp.LoggingLevel) {
	if !level.ShouldSendTo(mcp.LoggingLevelDebug) { // not one of the eight levels
		writeRPCResult(w, id, nil, mcp.INVALID_PARAMS, fmt.Sprintf("invalid logging level %q", level))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), setLevelTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		wg.Go(func() {
			hdr, err := p.d.Outbound(ctx, srv, r.Header, nil)
			if err == nil {
				err = p.d.Downstream.SetLogLevel(ctx, srv, level, hdr)
			}
			if err != nil {
				p.d.Logger.Warn("forwarding logging/setLevel failed", zap.String("request_id", p.d.RequestID(ctx)),
					zap.String("server", srv), zap.String("outcome", mcpclient.Outcome(err)), zap.Error(err))
			}
		})
	}
	wg.Wait()
	writeRPCResult(w, id, struct{}{}, 0, "")
}

// relayFor returns the relay of one proxied tools/call: progress under the
// caller's token, log messages when the caller wants them (a session-based
// caller always: the downstream session's level decides; a 2026-07-28 caller
// when its request states a level), and server-to-client requests.
func (p *Proxy) relayFor(ctx context.Context, req mcp.CallToolRequest, call *wire.Call) (*relay.Relay, *mcpclient.Relay) {
	var level mcp.LoggingLevel
	logs := true
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		level, logs = info.LogLevel, info.LogLevel != ""
	}
	relay := relay.New(ctx, call, call.Stream(), progressToken(req.Params.Meta), logs, level, p.d.Metrics)
	return relay, relay.Downstream(level, func(dctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		// Written on call's tracked response (call.Sink), or asked of its
		// round-trip state (call.Rounds).
		return p.d.Request(dctx, relay, call, method, params)
	})
}

// writeRPCResult writes a JSON-RPC answer to id: result, or an error when
// code is not zero.
func writeRPCResult(w http.ResponseWriter, id json.RawMessage, result any, code int, msg string) {
	if code != 0 {
		wire.WriteError(w, http.StatusOK, id, code, msg, nil)
		return
	}
	wire.WriteResult(w, id, result)
}
