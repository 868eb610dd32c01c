// Package wire holds every byte of MCP's wire that the gateway writes or
// reads by hand, beside mcp-go, which serves and calls MCP everywhere else.
// Each piece says the mcp-go (v1.2.1) gap it fills, what it buys in make
// bench (test/bench/README.md, "Wire-level code"), and the upstream change
// that would retire it.
//
//   - The envelope decode and check (message.go): a POST body decoded
//     once into a Message that the gateway checks (Check, the one envelope
//     check: gateway/jsonrpc.go; IsRequest for the fast path and the
//     endpoint's own answers) and the endpoint dispatches on. Gap: mcp-go's
//     handlePost decodes the body itself, about six times, and offers no
//     hook to dispatch on a decoded message before it. Buys: the one
//     decode the fast path needs, so that a call is not decoded again by
//     the gateway, the endpoint and the path. Retired by: a
//     StreamableHTTPServer entry point taking an already decoded
//     JSONRPCRequest.
//   - The server-side tools/call path (fastcall.go, stream.go, raw.go;
//     decorate.go, the one copy of mcp-go's decorateResponse), below. Gap:
//     mcp-go's per-request cost (ephemeral session, 100-slot notification
//     channel and forwarder goroutine, repeated _meta and header decoding)
//     and no way to write a result as bytes. Buys: routing at 64 callers
//     sessionless from 36% of direct (mcp-go) to 57-73%, at 107-329 µs
//     less gateway CPU per call; the raw result 3-6 points more and 3
//     copies of an 8 MiB result instead of 13. Retired by: a cheaper
//     stateless handlePost (no per-request session unless a notification
//     is sent) and a CallToolResult that can carry raw JSON.
//   - The SSE event writer and reader (sse.go): the one framing of a
//     message event, used by Stream and by the endpoint's server-to-client
//     requests on a call's stream. Gap: mcp-go exports no event writer and
//     no way to send a request of the server's own on a call's stream.
//     Buys: correctness (the relays of elicitation, sampling and roots),
//     not speed. Retired by: such an mcp-go API.
//   - The client-side raw tools/call (client.go): a downstream's
//     tools/call on its Streamable HTTP session POSTed by hand and its
//     answer (JSON, or an SSE stream with the call's notifications and the
//     server's requests) read as bytes; agents/mcpclient hands it the
//     session mcp-go opened. Gap: transport.SendRequest reads an answer
//     whole and decodes it, and hands a call's notifications to one
//     handler per transport, without the call. Buys: a large result
//     streamed from the body with no copy held (6.1-6.3 copies through
//     SendRequest), a call's log messages routed to it. Retired by: a SendRequest that
//     returns the answer's body as a reader, and a notification handler
//     per request.
//   - The message bound (bound.go): a downstream's answer read within the
//     64 MiB rule, in pooled pieces (ReadMessage, ReadPieces), and mcp-go's
//     client's HTTP bodies bounded under it per message or SSE event
//     (BoundBody). Gap: mcp-go's client reads a message whole with no
//     bound. Buys: a downstream cannot make the gateway hold more than the
//     bound. Retired by: a message bound in mcp-go's client transports.
//   - The SSE event reader (ssereader.go): the one reader of a
//     downstream's SSE stream (the client's raw tools/call), bounded per
//     event. Gap: mcp-go's client reads SSE inside its transport and
//     exports no reader. Buys: the raw results above, on the client side.
//     Retired by: an exported reader.
//   - The wire-level result types (result.go): RawResult, a downstream's
//     tools/call result as bytes, and RPCError, a JSON-RPC error for a
//     downstream; agents/mcpclient uses them under its own names.
//   - Large results streamed (body.go, jsonscan.go): a proxy's downstream
//     answer of more than 1 MiB comes back as a result value backed by the
//     response body, which the caller's response copies in pieces as it is
//     read and checked, never held whole, and Close releases. Gap:
//     mcp-go's client reads a result whole and decodes it; encoding/json
//     reads a value whole before it hands any of it over. Buys: 8
//     concurrent 60 MB results peak at 75 MB of RSS instead of 1.5 GB
//     (test/bench/README.md, "Large results"). Retired by: none in sight.
//   - The JSON-RPC answer writer (rpc.go): every JSON-RPC error or result
//     the gateway writes itself (the body checks, the endpoint's refusals,
//     a proxy's logging/setLevel and tasks). Gap: mcp-go writes its
//     answers inside handlePost and exports no writer. Retired by: an
//     exported writer of JSON-RPC responses.
//   - Notifications with a _meta (notify.go): an llm agent's progress
//     carrying a tool call's detail (agents.ToolDetailMeta) on the fast
//     path and on mcp-go's. Gap: mcp-go's SendNotificationToClient drops a
//     "_meta" member of the params it is given. Buys: correctness, not
//     speed. Retired by: SendNotificationToClient keeping it as
//     NotificationParams.Meta.
//   - The response writer (response.go): the writer of one agent
//     request's response, handed to mcp-go through Handle (a
//     server.HTTPResponseWriter) and to the fast path: SSE headers for
//     nginx, the SSE events counted, the request id in the message of a
//     JSON-RPC error (withRequestID, the one rewrite of mcp-go's output),
//     and the endpoint's own server-to-client requests injected on a
//     call's stream (Inject, the one writer of them: mcp-go's session is
//     upgraded to SSE first, so mcp-go answers as an event itself; the
//     fast path's Stream orders it). Gap: mcp-go sends a request of its
//     own on a call's stream for elicitation only, and its errors carry no
//     request id. Buys: correctness, not speed. Retired by: an mcp-go API
//     to send a request on a call's stream, and a hook on its errors.
//   - The refusals (refuse.go): what mcp-go would refuse with a text/plain
//     body (writeHTTPError) is answered before mcp-go sees it, as a
//     JSON-RPC error with mcp-go's status and wording (a DELETE of a
//     2026-07-28 caller or of an unknown version, a caller's response no
//     request waits for, a method other than POST and DELETE). Gap: mcp-go
//     has no hook for those answers. Buys: every error body is JSON-RPC.
//     Retired by: mcp-go answering its refusals as JSON-RPC errors.
//   - The switch (switch.go): wire.fast in the config, PALLASGW_WIRE_FAST=off
//     in the environment; off, mcp-go serves and calls every request it can
//     (Fast).
//
// The server-side tools/call path answers a plain tools/call without
// mcp-go's server. Everything else,
// and any tools/call it is not sure of, goes to mcp-go untouched (Serve
// reports false and has written nothing).
//
// Why. Through mcp-go (v1.2.1) a call costs the gateway more in mcp-go's
// server than a proxied call costs in the proxy: it parses the body about
// six times, decodes the 2026-07-28 _meta three times, checks the Mcp-*
// headers against the tool's schema, and makes a per-request session with a
// 100-slot notification channel and a forwarder goroutine. Measured with
// make bench (test/bench/README.md, "Wire-level code"): the proxy routing benchmark at 64
// callers keeps 36% of direct sessionless throughput without this package
// and 57-73% with it, at 107-329 µs less gateway CPU per call; the agent
// loop's CPU per call falls by about a quarter.
//
// What it mirrors of mcp-go, and must keep mirroring on an upgrade:
//   - handlePost's acceptance of a tools/call: Content-Type, protocol
//     version and era (detectRequestEra, extractRequestProtocolInfo,
//     rejectUnsupportedProtocolVersion), for 2026-07-28 validateModernRequest
//     and ValidateStandardHeaders (Mcp-Method, Mcp-Name; no Last-Event-ID;
//     client capabilities in _meta);
//   - the request the handler gets (the decoded id, params, _meta's
//     progress token) and handleToolCall's answer (noResultError, the
//     multi round-trip check, handlerError, decorateResponse for 2026-07-28);
//   - the response: JSON unless a notification comes first, then SSE events
//     ("event: message"), one per write, flushed (Stream).
//
// What it does not take, and why:
//   - requests mcp-go would refuse or treat specially: a Content-Type other
//     than application/json, an unknown or inconsistent protocol version, a
//     2026-07-28 request without its capabilities, Mcp-Method or Mcp-Name
//     headers, or with Last-Event-ID; members of a response (result, error);
//     params mcp-go reads and this package does not (task, inputResponses,
//     requestState);
//   - a name the Target does not answer (for a proxy, one not yet in
//     mcp-go's registry; get_health everywhere);
//   - a call whose notifications/cancelled key cannot be tracked (Serve's
//     track: another running call with the same key, or the table full).
//
// The switch covers every piece: off, Serve declines every call (mcp-go's
// handlers then call the downstream through mcp-go's client), every
// downstream tools/call goes through mcp-go's transport
// (transport.SendRequest; a proxy's result still comes back as the
// downstream's bytes, PeekResult), the toolbox's results and the tool loop's
// downstream calls are typed, and no large result is streamed. One
// server-side piece runs off too, since mcp-go's server cannot finish a
// call its Target started: a 2026-07-28 call through the endpoint's
// input-required bridge (ServeRoundTrip); its downstream call is mcp-go's.
package wire
