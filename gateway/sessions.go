package gateway

// The shared session store (sessions.store): opened at start and kept for
// the process's life (a reload that changes it is told a restart is
// needed). With memory there is none, and nothing is read per request.

import (
	"context"
	"time"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/proxy"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// sessionStoreTimeout bounds one session store operation: a store that
// does not answer refuses the request that needed it, never hangs it.
const sessionStoreTimeout = 250 * time.Millisecond

// openSessions opens cfg's session store and starts its subscriptions.
func (g *Gateway) openSessions(cfg *config.Config) error {
	if cfg.Sessions.Store == config.StoreMemory || cfg.Sessions.Store == "" {
		return nil
	}
	st, err := sessions.NewRedis(cfg.Sessions.Store, sessionStoreTimeout)
	if err != nil {
		return cfg.ErrorAt([]string{"sessions", "store"}, err.Error())
	}
	g.sessions = st
	ctx, cancel := context.WithCancel(context.Background())
	g.stopSessions = cancel
	g.callerReqs.Share(ctx, st, g.log.Named("sessions"), g.metrics)
	return nil
}

// closeSessions ends the store's subscriptions and closes it.
func (g *Gateway) closeSessions() {
	if g.sessions == nil {
		return
	}
	g.stopSessions()
	_ = g.sessions.Close()
}

// downstreamStore is the store downstream managers share callers'
// sessions through, nil with memory.
func (g *Gateway) downstreamStore() mcpclient.SessionStore {
	if g.sessions == nil {
		return nil
	}
	return g.sessions
}

// taskIndex is where proxies record callers' tasks for every replica, nil
// with memory.
func (g *Gateway) taskIndex() proxy.TaskIndex {
	if g.sessions == nil {
		return nil
	}
	return g.sessions
}
