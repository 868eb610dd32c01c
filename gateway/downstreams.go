package gateway

import (
	"context"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/policy"
)

// newDownstreamCache is the gateway's cache of downstream managers (each
// snapshot's view of it, mcpclient.Downstreams, is the one downstream the
// agents call), built
// once the session store is open (the managers share callers' sessions
// through it).
func (g *Gateway) newDownstreamCache() *mcpclient.Cache {
	return mcpclient.NewCache(mcpclient.CacheOptions{
		Manager: mcpclient.Options{
			Logger: g.log.Named("downstream"), Metrics: g.metrics, ClientName: "pallasgw", ClientVersion: g.opts.Version,
			ToolFilter: g.pins.Filter,   // pins.go: each list read is hashed and checked once
			CallerOf:   sessions.Caller, // whom a session_scope caller server's session belongs to
			// whose own token a server with oauth receives: its sessions
			// are the principal's, whatever token it holds now
			PrincipalOf: func(ctx context.Context) string { return policy.IdentityFrom(ctx).Principal() },
			Sessions:    g.downstreamStore(),
			Guard:       g.pins, // the call guard: refuses calls of unapproved tools (pins.go)
		},
		Log: g.log,
	})
}
