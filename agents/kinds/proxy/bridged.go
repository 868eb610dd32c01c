package proxy

// prompts/get and resources/read for the input-required bridge
// (agents/bridge): a 2026-07-28 caller's prompts/get or
// resources/read is run by the endpoint, not by mcp-go, so that a
// downstream that asks for elicitation, sampling or roots while it answers
// gets its answer from the caller's retry. These return the call the
// bridge runs; the policy, audit and routing are getPrompt's and
// readResource's.

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// PromptCall is prompts/get of the exposed prompt name with args for the
// caller of ctx (inbound: its headers); nil when no server of the caller
// lists the prompt, which mcp-go then answers as it answers any unknown
// name.
func (p *Proxy) PromptCall(ctx context.Context, name string, args map[string]string, inbound http.Header) bridge.CatalogCall {
	p.ensurePrompt(ctx, name, inbound)
	if _, ok := p.prompts.Load(name); !ok {
		return nil
	}
	return func(ctx context.Context, rounds wire.Rounds) (any, error) {
		var req mcp.GetPromptRequest
		req.Header = inbound
		req.Params.Name, req.Params.Arguments = name, args
		return p.getPrompt(ctx, req, p.relayRequests(rounds))
	}
}

// ResourceCall is resources/read of uri for the caller of ctx; nil when no
// server of the caller offers it (as PromptCall).
func (p *Proxy) ResourceCall(ctx context.Context, uri string, inbound http.Header) bridge.CatalogCall {
	srv, err := p.resourceServer(ctx, uri, inbound)
	if err != nil {
		return nil
	}
	return func(ctx context.Context, rounds wire.Rounds) (any, error) { // readResource's, with the server found once
		if err := p.allowServer(ctx, srv, "resource:"+uri); err != nil {
			return nil, err
		}
		relay := p.relayRequests(rounds)
		hdr, err := p.d.Outbound(ctx, srv, inbound, relay)
		if err != nil {
			return nil, err // as getPrompt's
		}
		res, err := p.d.Downstream.ReadResource(ctx, srv, uri, hdr, relay)
		if err != nil {
			return nil, err
		}
		contents := res.Contents
		if contents == nil {
			contents = []mcp.ResourceContents{} // a required array, as mcp-go sends it
		}
		return &mcp.ReadResourceResult{Contents: contents}, nil
	}
}

// relayRequests is the Relay of a bridged downstream request: it takes the
// downstream's server-to-client requests to the endpoint (Host.Request),
// which asks them of rounds, the bridged call's round-trip state; nil
// without a Host. Log
// messages and progress are not relayed: a bridged prompts/get or
// resources/read is answered as plain JSON.
func (p *Proxy) relayRequests(rounds wire.Rounds) *mcpclient.Relay {
	if p.d.Host == nil {
		return nil
	}
	return &mcpclient.Relay{
		Request: func(dctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return p.d.Request(dctx, nil, &wire.Call{Rounds: rounds}, method, params)
		}}
}

// Self is the agent's identity as its MCP server gives it.
func (p *Proxy) Self() mcp.Implementation { return p.d.Self }

// Caching hints (SEP-2549) of a proxy's results for 2026-07-28 callers.
// Every list is built for its caller (the caller policy, and the
// credentials its request forwards downstream): private. And revalidated
// each time (ttlMs 0): a list follows its downstreams, whose changes the
// proxy cannot push to a 2026-07-28 caller (it declares no listChanged),
// and a downstream's change shows in the caller's next list; clients do
// cache for the ttl (go-sdk's does). A read is the downstream's content,
// which a 2025-era downstream gives no freshness for: revalidated too.
const (
	listTTL    = 0 // ms
	readTTL    = 0
	cacheScope = mcp.CacheScopePrivate
)

// ReadCacheHints are the caching hints of a proxied resources/read result.
func (p *Proxy) ReadCacheHints() (ttlMs int64, scope mcp.CacheScope) { return readTTL, cacheScope }
