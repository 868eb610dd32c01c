package gateway

// Quotas: the stores outlive snapshots, so that a reload keeps
// every caller's counters; a snapshot holds the Guard its config asks for.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
	"github.com/pallasgw/pallasgw/policy/quota"
)

// quotaStores are the gateway's stores by quotas.store; they close with
// the gateway.
type quotaStores struct {
	mu     sync.Mutex
	stores map[string]quota.Store
}

// storeTimeout bounds one quota store operation.
const storeTimeout = 250 * time.Millisecond

func (q *quotaStores) get(url string) (quota.Store, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.stores[url]; s != nil {
		return s, nil
	}
	var s quota.Store = quota.NewMemory()
	if url != "memory" {
		var err error
		if s, err = quota.NewRedis(url, storeTimeout); err != nil {
			return nil, err
		}
	}
	if q.stores == nil {
		q.stores = map[string]quota.Store{}
	}
	q.stores[url] = s
	return s, nil
}

func (q *quotaStores) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range q.stores {
		_ = s.Close()
	}
	q.stores = nil
}

// buildQuotas makes the Guard of cfg, or nil when no rule has limits.
func (g *Gateway) buildQuotas(cfg *config.Config) (*quota.Guard, error) {
	limited := cfg.Policy.Default != nil && cfg.Policy.Default.Limits != (config.QuotaLimits{})
	for _, r := range cfg.Policy.Callers {
		limited = limited || (r != nil && r.Limits != (config.QuotaLimits{}))
	}
	if !limited {
		return nil, nil
	}
	store, err := g.quotaStores.get(cfg.Quotas.Store)
	if err != nil {
		return nil, err
	}
	log := g.log.Named("quota")
	return &quota.Guard{Store: store, FailOpen: cfg.Quotas.OnStoreError == "open",
		OnReject: func(caller, reason string) { g.metrics.QuotaRejections.WithLabelValues(caller, reason).Inc() },
		OnStoreError: func(op string, err error) {
			g.metrics.QuotaStoreErrors.WithLabelValues(op).Inc()
			log.Warn("quota store failed", zap.String("op", op), zap.Bool("fail_open", cfg.Quotas.OnStoreError == "open"), zap.Error(err))
		}}, nil
}

// takeRequest applies the caller's request rate: 429 with Retry-After when
// it is over, 503 when the store is down and quotas.on_store_error is
// closed.
func (g *Gateway) takeRequest(w http.ResponseWriter, r *http.Request, s *Snapshot, id policy.Identity, rid, agent string) bool {
	if s.quotas == nil {
		return true
	}
	key, label := id.QuotaKey()
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	err := s.quotas.Request(ctx, key, label, s.callers.Limits(id.PolicyKey()))
	var over *quota.ExceededError
	switch {
	case err == nil:
		return true
	case errors.As(err, &over):
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(over.RetryAfter.Seconds()))))
		g.refuse(w, http.StatusTooManyRequests, rid, agent, over.Error())
	default:
		w.Header().Set("Retry-After", "1")
		g.refuse(w, http.StatusServiceUnavailable, rid, agent, fmt.Sprintf("%v; quotas.on_store_error is closed", err))
	}
	return false
}
