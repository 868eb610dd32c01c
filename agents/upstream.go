package agents

// Each caller's own credentials for a server with oauth
// (mcp.servers.X.oauth): the gateway's UpstreamCredentials answers the
// Authorization the server receives for the caller's principal, or
// *ConnectRequired with the URL where the person connects their account.
// What the caller then gets depends on its protocol and capabilities
// (upstreamAuthorization): a URL elicitation relayed on the call, -32042,
// -32021, or the URL in words; each kind hands the error on as it hands on
// any other.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

// UpstreamCredentials gives a server with oauth the caller's own token.
type UpstreamCredentials interface {
	// Authorization is the Authorization header value server receives for
	// principal (policy.Identity.Principal), or *ConnectRequired.
	Authorization(ctx context.Context, server, principal string) (string, error)
	// Rejected says server refused principal's token (HTTP 401): the next
	// Authorization renews it first.
	Rejected(ctx context.Context, server, principal string)
	// WaitConnected waits until principal has a connection to server, for
	// at most the server's oauth.connect_wait; false when it ended first.
	WaitConnected(ctx context.Context, server, principal string) bool
}

// ConnectRequired says a caller has no usable connection to a server's
// authorization server and where the person connects one.
type ConnectRequired struct {
	Server string
	// URL is the gateway's own connect page for this principal and server
	// (single-use, short-lived); empty when the caller cannot connect
	// (an anonymous caller).
	URL string
	// ID identifies the connect link (the URL elicitation's elicitationId).
	ID string
	// Reason says why: not connected, or the connection could not be renewed.
	Reason string
}

func (e *ConnectRequired) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("server %s acts for each caller with the caller's own account (%s)", e.Server, e.Reason)
	}
	return fmt.Sprintf("server %s needs your own account connected (%s): open %s to connect it, then call again", e.Server, e.Reason, e.URL)
}

// ConnectURL is where the person connects ("" when the caller cannot):
// what a kind that cannot name this type finds in an error's chain.
func (e *ConnectRequired) ConnectURL() string { return e.URL }

// connectNotMade is a ConnectRequired whose caller was asked to connect
// and did not (declined, or did not finish in time): its text says so.
type connectNotMade struct {
	*ConnectRequired
	text string
}

func (e connectNotMade) Error() string { return e.text }
func (e connectNotMade) Unwrap() error { return e.ConnectRequired }

// Elicitation is the URL-mode elicitation that asks the person to connect.
func (e *ConnectRequired) Elicitation() mcp.ElicitationParams {
	return mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, ElicitationID: e.ID, URL: e.URL,
		Message: fmt.Sprintf("Connect your account for %s (%s)", e.Server, e.Reason)}
}

// urlElicitationRequired is a ConnectRequired for a 2025-11-25 caller: it
// reads as mcp.URLElicitationRequiredError (-32042 with the URL) wherever
// an error is answered as a JSON-RPC error, and as the URL in words where
// it becomes a tool result (toolbox, an llm agent's model).
type urlElicitationRequired struct{ *ConnectRequired }

func (e urlElicitationRequired) Unwrap() error { return e.ConnectRequired }

func (e urlElicitationRequired) As(target any) bool {
	switch t := target.(type) {
	case *mcp.URLElicitationRequiredError:
		*t = mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{e.Elicitation()}}
		return true
	case **mcp.URLElicitationRequiredError:
		*t = &mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{e.Elicitation()}}
		return true
	}
	return false
}

// upstreamAuthorization is the Authorization server receives for the
// caller of ctx, whose request came with inbound headers; relay (nil: none)
// is the call's, by which the caller may be asked to connect.
func (s *Set) upstreamAuthorization(ctx context.Context, server string, inbound http.Header, relay *mcpclient.Relay) (string, error) {
	up := s.deps.Upstream
	if up == nil {
		return "", fmt.Errorf("server %s has oauth and this gateway keeps no upstream credentials", server)
	}
	principal := policy.IdentityFrom(ctx).Principal()
	if principal == "" {
		return "", &ConnectRequired{Server: server, Reason: "an anonymous caller cannot connect an account; authenticate to the gateway"}
	}
	auth, err := up.Authorization(ctx, server, principal)
	cr, ok := err.(*ConnectRequired)
	switch {
	case !ok || cr.URL == "":
	case urlElicitationsAnswered(inbound):
		if done, err := s.elicitConnect(ctx, cr, principal, relay); done {
			return up.Authorization(ctx, server, principal)
		} else if err != nil {
			return "", err
		}
		return "", urlElicitationRequired{cr}
	case mcp.IsModernProtocol(inbound.Get(mcp.HeaderProtocolVersion)) && !declaredURLElicitation(ctx):
		return "", missingURLElicitation{cr}
	case mcp.IsModernProtocol(inbound.Get(mcp.HeaderProtocolVersion)):
		return s.connectByRounds(ctx, cr, principal, relay)
	}
	return auth, err
}

// connectByRounds asks a 2026-07-28 caller that declared URL-mode
// elicitation to connect: an input-required round carrying the URL
// elicitation (the relay is the input-required bridge's), and, while a
// retry that accepts it finds the connection not made yet, the same round
// again. Without a relay to ask by, the caller gets cr (the URL in words).
func (s *Set) connectByRounds(ctx context.Context, cr *ConnectRequired, principal string, relay *mcpclient.Relay) (string, error) {
	if relay == nil || relay.Request == nil {
		return "", cr
	}
	for {
		params, _ := json.Marshal(cr.Elicitation())
		raw, err := relay.Request(ctx, string(mcp.MethodElicitationCreate), params)
		var res mcp.ElicitationResult
		if err != nil || json.Unmarshal(raw, &res) != nil {
			return "", cr // the call ended, or the answer is not one
		}
		if res.Action != mcp.ElicitationResponseActionAccept {
			return "", declined(cr, res.Action)
		}
		auth, err := s.deps.Upstream.Authorization(ctx, cr.Server, principal)
		next, ok := err.(*ConnectRequired)
		if !ok || next.URL == "" {
			return auth, err
		}
		cr = next // not connected yet: the same link, asked again
	}
}

// elicitConnect asks the caller of a call whose answers can be relayed (a
// 2025-11-25 session that declared URL-mode elicitation) to open the connect URL,
// by a URL-mode elicitation/create on the call's stream, then waits for the
// connection (oauth.connect_wait). done: connected, the call goes on; err:
// the person declined; neither: the caller cannot be asked (no relay, no
// URL-mode elicitation), it gets -32042.
func (s *Set) elicitConnect(ctx context.Context, cr *ConnectRequired, principal string, relay *mcpclient.Relay) (done bool, err error) {
	if relay == nil || relay.Request == nil {
		return false, nil
	}
	params, _ := json.Marshal(cr.Elicitation())
	raw, rerr := relay.Request(ctx, string(mcp.MethodElicitationCreate), params)
	if rerr != nil {
		return false, nil // not declared, or refused: the error says where to go
	}
	var res mcp.ElicitationResult
	if json.Unmarshal(raw, &res) != nil {
		return false, nil
	}
	if res.Action != mcp.ElicitationResponseActionAccept {
		return false, declined(cr, res.Action)
	}
	if !s.deps.Upstream.WaitConnected(ctx, cr.Server, principal) {
		return false, connectNotMade{cr, fmt.Sprintf("server %s: the connection was not completed in time; open %s to connect, then call again", cr.Server, cr.URL)}
	}
	if notify := relay.Notify; notify != nil && !server.IsModernRequest(ctx) {
		// The client may close what it showed for the elicitation (a
		// 2026-07-28 retry is its own request: nothing to close).
		_ = notify("notifications/elicitation/complete", map[string]any{"elicitationId": cr.ID})
	}
	return true, nil
}

// declined is the error of a caller that did not accept the request to
// connect (action: decline, cancel).
func declined(cr *ConnectRequired, action mcp.ElicitationResponseAction) error {
	return connectNotMade{cr, fmt.Sprintf("server %s needs your own account connected, and the request to connect was not accepted (%s); open %s to connect it later", cr.Server, action, cr.URL)}
}

// declaredURLElicitation reports a 2026-07-28 request whose client
// declared URL-mode elicitation.
func declaredURLElicitation(ctx context.Context) bool {
	info := server.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil &&
		info.ClientCapabilities.Elicitation.URL != nil
}

// missingURLElicitation is a ConnectRequired for a 2026-07-28 caller that
// did not declare URL-mode elicitation: -32021 naming the capability
// (2026-07-28 reserves -32042), with the URL in its message; in words
// where it becomes a tool result.
type missingURLElicitation struct{ *ConnectRequired }

func (e missingURLElicitation) Unwrap() error { return e.ConnectRequired }

func (e missingURLElicitation) As(target any) bool {
	t, ok := target.(**wire.RPCError)
	if !ok {
		return false
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
	*t = &wire.RPCError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Data: data,
		Message: "the elicitation.url client capability is needed to connect your account: " + e.ConnectRequired.Error()}
	return true
}

// urlElicitationsAnswered reports a session-based caller of protocol
// 2025-11-25, the revision that has URL elicitation and error -32042. A
// 2025-06-18 caller has neither (it gets the URL in a tool error's text);
// 2026-07-28 reserves -32042 (missingURLElicitation).
func urlElicitationsAnswered(inbound http.Header) bool {
	return inbound.Get(mcp.HeaderProtocolVersion) == "2025-11-25"
}

// upstreamRejected tells the credentials of a call that server refused
// for its credentials (HTTP 401), when server has oauth.
func (s *Set) upstreamRejected(ctx context.Context, server string, err error) {
	srv := s.deps.Config.MCP.Servers[server]
	if srv == nil || srv.OAuth == nil || s.deps.Upstream == nil || !errors.Is(err, transport.ErrAuthorizationRequired) {
		return
	}
	if p := policy.IdentityFrom(ctx).Principal(); p != "" {
		s.deps.Upstream.Rejected(ctx, server, p)
	}
}
