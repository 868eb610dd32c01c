package gateway

// The shared session store (sessions.store): opened at start and kept for
// the process's life (a reload that changes it is told a restart is
// needed). With memory there is none, and nothing is read per request.

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
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
	g.sessions = observedStore{Store: st, log: g.log.Named("sessions"), metrics: g.metrics}
	ctx, cancel := context.WithCancel(context.Background())
	g.stopSessions = cancel
	g.callerReqs.Share(ctx, g.sessions)
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
func (g *Gateway) taskIndex() agents.TaskIndex {
	if g.sessions == nil {
		return nil
	}
	return g.sessions
}

// observedStore logs and counts every failed operation of the store
// (pallasgw_session_store_errors_total{op}), so that its users only decide
// what a failure means for their request. The store's errors name no
// password (sessions.NewRedis).
type observedStore struct {
	sessions.Store
	log     *zap.Logger
	metrics *metrics.Metrics
}

func (o observedStore) failed(op string, err error) error {
	if err != nil {
		o.log.Warn("session store failed", zap.String("op", op), zap.Error(err))
		o.metrics.SessionStoreErrors.WithLabelValues(op).Inc()
	}
	return err
}

func (o observedStore) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := o.Store.Get(ctx, key)
	return b, o.failed("get", err)
}

func (o observedStore) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	return o.failed("set", o.Store.Set(ctx, key, val, ttl))
}

func (o observedStore) Claim(ctx context.Context, key string, val []byte, ttl time.Duration) (bool, error) {
	ok, err := o.Store.Claim(ctx, key, val, ttl)
	return ok, o.failed("claim", err)
}

func (o observedStore) IndexAdd(ctx context.Context, key, member string, max int, ttl time.Duration) error {
	return o.failed("index_add", o.Store.IndexAdd(ctx, key, member, max, ttl))
}

func (o observedStore) IndexMembers(ctx context.Context, key string) ([]string, error) {
	members, err := o.Store.IndexMembers(ctx, key)
	return members, o.failed("index_members", err)
}

func (o observedStore) IndexHas(ctx context.Context, key string, members []string) ([]bool, error) {
	has, err := o.Store.IndexHas(ctx, key, members)
	return has, o.failed("index_read", err)
}

func (o observedStore) Publish(ctx context.Context, channel string, msg []byte) (int64, error) {
	n, err := o.Store.Publish(ctx, channel, msg)
	return n, o.failed("publish", err)
}

func (o observedStore) Subscribe(ctx context.Context, channel string, fn func([]byte)) error {
	return o.failed("subscribe", o.Store.Subscribe(ctx, channel, fn))
}
