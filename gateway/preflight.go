package gateway

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
)

const preflightTimeout = 5 * time.Second

// preflight checks each configured provider once per snapshot (SPEC §6:
// warn-only, 5 s). Results feed get_health and pallasgw_llm_provider_up.
type preflight struct {
	providers map[string]llm.Provider
	models    map[string][]string // provider → models used by agents
	metrics   *metrics.Metrics
	log       *zap.Logger

	mu      sync.Mutex
	results map[string]error
	done    chan struct{} // closed when every provider has been checked
}

func newPreflight(providers map[string]llm.Provider, cfg *config.Config, m *metrics.Metrics, log *zap.Logger) *preflight {
	p := &preflight{providers: providers, models: map[string][]string{}, metrics: m, log: log.Named("preflight"), results: map[string]error{}, done: make(chan struct{})}
	seen := map[string]bool{}
	refs := []string{cfg.Models.Default}
	for _, a := range cfg.Agents {
		refs = append(refs, a.Model)
	}
	for _, ref := range refs {
		prov, model := config.SplitModel(ref)
		if providers[prov] != nil && !seen[ref] {
			seen[ref] = true
			p.models[prov] = append(p.models[prov], model)
		}
	}
	return p
}

// start runs the checks in the background, owned by the gateway.
func (p *preflight) start(g *Gateway) {
	var all sync.WaitGroup
	for name, prov := range p.providers {
		g.wg.Add(1)
		all.Add(1)
		go func() {
			defer g.wg.Done()
			defer all.Done()
			ctx, cancel := context.WithTimeout(g.baseCtx, preflightTimeout)
			defer cancel()
			var err error
			for _, model := range p.models[name] {
				if err = prov.Preflight(ctx, model); err != nil {
					break
				}
			}
			p.mu.Lock()
			p.results[name] = err
			p.mu.Unlock()
			if err != nil {
				p.metrics.ProviderUp.WithLabelValues(name).Set(0)
				p.log.Warn("provider preflight failed", zap.String("provider", name), zap.Error(err))
				return
			}
			p.metrics.ProviderUp.WithLabelValues(name).Set(1)
			p.log.Info("provider preflight ok", zap.String("provider", name), zap.Strings("models", p.models[name]))
		}()
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		all.Wait()
		close(p.done)
	}()
}

// result is the last preflight error of a provider (nil: ok or not run).
func (p *preflight) result(provider string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.results[provider]
}
