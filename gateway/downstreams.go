package gateway

import (
	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/proxy"
	"github.com/pallasgw/pallasgw/agents/sessions"
)

// What the agents need of a snapshot's downstream servers
// (mcpclient.Downstreams, one view per snapshot over managers the
// gateway's mcpclient.Cache keeps warm across reloads).
var (
	_ agents.Downstream            = (*mcpclient.Downstreams)(nil)
	_ agents.JSONDownstream        = (*mcpclient.Downstreams)(nil)
	_ proxy.CatalogDownstream      = (*mcpclient.Downstreams)(nil)
	_ proxy.LoggingDownstream      = (*mcpclient.Downstreams)(nil)
	_ proxy.CapabilitiesDownstream = (*mcpclient.Downstreams)(nil)
	_ proxy.TaskDownstream         = (*mcpclient.Downstreams)(nil)
	_ pins.Hider                   = (*mcpclient.Downstreams)(nil)
	_ mcpclient.RawCaller          = (*mcpclient.Downstreams)(nil)
)

// newDownstreamCache is the gateway's cache of downstream managers, built
// once the session store is open (the managers share callers' sessions
// through it).
func (g *Gateway) newDownstreamCache() *mcpclient.Cache {
	return mcpclient.NewCache(mcpclient.CacheOptions{
		Manager: mcpclient.Options{
			Logger: g.log.Named("downstream"), Metrics: g.metrics, ClientName: "pallasgw", ClientVersion: g.opts.Version,
			ToolFilter: g.pins.Filter,   // pins.go: each list read is hashed and checked once
			CallerOf:   sessions.Caller, // whom a session_scope caller server's session belongs to
			Sessions:   g.downstreamStore(),
		},
		Guard: g.pins, // refuses calls of unapproved tools (pins.go)
		Log:   g.log,
	})
}
