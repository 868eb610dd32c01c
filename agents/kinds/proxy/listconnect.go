package proxy

// A tools/list of a caller who has not connected its own account to a
// server that acts with each caller's (mcp.servers.X.oauth) asks the
// caller to connect, as a call of that server's tool does: a URL
// elicitation where the caller can take one, then the list goes on;
// otherwise the error the call would get (-32042, -32021, or the URL in
// words). The endpoint asks first (endpoint.ListGuard); the list itself is
// toolView's.

import (
	"context"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

var (
	_ endpoint.ListGuard = (*Proxy)(nil)
	_ bridge.Lister      = (*Proxy)(nil)
)

// connectRequired is what the proxy knows of a caller without a connection
// (agents.ConnectRequired): the URL where the person connects, "" when the
// caller cannot (an anonymous caller, whose list leaves the server out).
type connectRequired interface{ ConnectURL() string }

// needsConnect reports err (of Deps.Outbound) asking its caller to connect.
func needsConnect(err error) bool {
	var cr connectRequired
	return errors.As(err, &cr) && cr.ConnectURL() != ""
}

// GuardList asks the caller of ctx to connect, by relay (nil: it cannot be
// asked), each server of its that needs the caller's own account and has
// none yet; it returns the first such server's error when the caller could
// not be asked or did not connect, nil when the list may go on.
func (p *Proxy) GuardList(ctx context.Context, inbound http.Header, relay *mcpclient.Relay) error {
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		if _, err := p.d.Outbound(ctx, srv, inbound, relay); needsConnect(err) {
			return err
		}
	}
	return nil
}

// Tools is the caller's tools/list (toolView).
func (p *Proxy) Tools(ctx context.Context, inbound http.Header) []mcp.Tool {
	return p.toolView(ctx, inbound)
}

// ListCall is a 2026-07-28 caller's tools/list run through the
// input-required bridge, so that the URL elicitation goes in an
// input-required round: when a server of the caller needs it to connect,
// or the request continues such a round (roundTrip). nil otherwise:
// mcp-go answers the list.
func (p *Proxy) ListCall(ctx context.Context, inbound http.Header, roundTrip bool) bridge.CatalogCall {
	if !roundTrip && p.GuardList(ctx, inbound, nil) == nil {
		return nil
	}
	return func(ctx context.Context, rounds wire.Rounds) (any, error) {
		if err := p.GuardList(ctx, inbound, p.relayRequests(rounds)); err != nil {
			return nil, err
		}
		return &mcp.ListToolsResult{Tools: p.toolView(ctx, inbound)}, nil
	}
}
