// Package upstreamauth owns each caller's own credentials for downstream
// MCP servers that have their own authorization server
// (mcp.servers.X.oauth): the OAuth client of each such server (discovery
// by RFC 9728, RFC 8414 or OpenID discovery; dynamic registration by RFC
// 7591; authorization code with PKCE and refresh through
// golang.org/x/oauth2), the vault that keeps each principal's tokens
// sealed in the session store, and the connect pages (/connect/...) where a
// person proves who they are and connects their account.
//
// The agents ask it, through agents.UpstreamCredentials, for the
// Authorization a server receives for a principal; without a usable
// connection it answers *agents.ConnectRequired, and each agent kind tells
// its caller where to connect. It never serves MCP, builds agents or
// decides policy, and it never logs, exports or returns a token.
package upstreamauth
