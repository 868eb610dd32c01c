package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics"
)

const preflightTimeout = 5 * time.Second

// providerChecks is how often providers are checked again (the start-up
// preflight, repeated so that pallasgw_llm_provider_up and get_health follow
// the providers, not the config). Variables so tests can shorten them.
var providerChecks = struct {
	every     time.Duration // while a provider is up
	retryMin  time.Duration // first retry after a failed check; doubles up to every
	kickedGap time.Duration // least time between checks asked for by real calls
}{every: time.Minute, retryMin: 2 * time.Second, kickedGap: 2 * time.Second}

// preflight checks each configured provider when a snapshot starts serving
// (warn-only, 5 s), then again every providerChecks.every while it is up,
// with backoff while it is down, and at once when a real call disagrees
// with the last result. Results feed get_health and
// pallasgw_llm_provider_up.
type preflight struct {
	providers map[string]llm.Provider
	models    map[string][]string // provider → models used by agents
	metrics   *metrics.Metrics
	log       *zap.Logger

	mu      sync.Mutex
	results map[string]error
	checked map[string]bool // providers checked at least once
	// failing is when each failing provider's check began failing;
	// answered when a real call to it last answered (zero: the last call
	// failed, or none was made).
	failing  map[string]time.Time
	answered map[string]time.Time
	kick     map[string]chan struct{} // a real call disagreed with the result
	done     chan struct{}            // closed when every provider has been checked once
	changed  chan struct{}            // a provider's result flipped, or its first check failed (capacity 1)
}

func newPreflight(providers map[string]llm.Provider, cfg *config.Config, m *metrics.Metrics, log *zap.Logger) *preflight {
	p := &preflight{providers: providers, models: map[string][]string{}, metrics: m, log: log.Named("preflight"),
		results: map[string]error{}, checked: map[string]bool{}, kick: map[string]chan struct{}{},
		failing: map[string]time.Time{}, answered: map[string]time.Time{},
		done: make(chan struct{}), changed: make(chan struct{}, 1)}
	seen := map[string]bool{}
	// The models agents use (an agent without a model has models.default
	// by then); models.default alone is no model anyone calls.
	var refs []string
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
	for name := range providers {
		p.kick[name] = make(chan struct{}, 1)
	}
	return p
}

// start runs one check loop per provider, owned by the gateway, until stop
// closes (the snapshot is retired) or the gateway stops.
func (p *preflight) start(g *Gateway, stop <-chan struct{}) {
	var first sync.WaitGroup
	for name := range p.providers {
		g.wg.Add(1)
		first.Add(1)
		go func() {
			defer g.wg.Done()
			p.loop(g.baseCtx, stop, name, first.Done)
		}()
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		first.Wait()
		close(p.done)
	}()
}

// loop checks one provider until stop; checkedOnce is called after the first
// check.
func (p *preflight) loop(ctx context.Context, stop <-chan struct{}, name string, checkedOnce func()) {
	retry := providerChecks.retryMin
	for n := 0; ; n++ {
		err := p.check(ctx, name)
		select {
		case <-stop: // retired mid-check: the next snapshot's checks publish
			if n == 0 {
				checkedOnce()
			}
			return
		default:
		}
		if ctx.Err() != nil {
			if n == 0 {
				checkedOnce()
			}
			return
		}
		p.record(name, err)
		if n == 0 {
			checkedOnce()
		}
		wait := providerChecks.every
		if err != nil {
			wait, retry = retry, min(2*retry, providerChecks.every)
		} else {
			retry = providerChecks.retryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.kick[name]:
			t.Stop()
			gap := time.NewTimer(providerChecks.kickedGap)
			select { // at most one check per gap, however many calls disagree
			case <-gap.C:
			case <-stop:
				gap.Stop()
				return
			case <-ctx.Done():
				gap.Stop()
				return
			}
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// check runs the provider's preflight for every model agents use of it; a
// provider no agent uses is checked too (that it answers and takes the
// key), so that pallasgw_llm_provider_up never reports one nobody looked at.
func (p *preflight) check(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if len(p.models[name]) == 0 {
		return p.providers[name].Preflight(ctx, "")
	}
	for _, model := range p.models[name] {
		if err := p.providers[name].Preflight(ctx, model); err != nil {
			return err
		}
	}
	return nil
}

// recentAnswer is how long a real call that answered keeps a provider
// whose check fails up.
const recentAnswer = 10 * time.Minute

// record stores a check's result, publishes it, and logs when it changed.
func (p *preflight) record(name string, err error) {
	p.mu.Lock()
	was, first := p.results[name], !p.checked[name]
	p.results[name], p.checked[name] = err, true
	switch {
	case err == nil:
		delete(p.failing, name)
	case was == nil || first:
		p.failing[name] = time.Now()
	}
	// Set under p.mu, so that a real call's result (observed) cannot be
	// overwritten by an older one.
	p.metrics.ProviderUp.WithLabelValues(name).Set(p.upLocked(name))
	p.mu.Unlock()
	flipped := !first && (was == nil) != (err == nil)
	if err != nil {
		if first || flipped {
			p.log.Warn("provider preflight failed", zap.String("provider", name), zap.Error(err))
		}
	} else {
		if first || flipped {
			p.log.Info("provider preflight ok", zap.String("provider", name), zap.Strings("models", p.models[name]))
		}
	}
	if flipped || first && err != nil { // (health computed before the first check assumed ok)
		select {
		case p.changed <- struct{}{}:
		default:
		}
	}
}

// observed is what a real call to a provider saw (err nil: it answered).
// A provider whose check fails but whose calls answer is up
// (pallasgw_llm_provider_up 1, agents degraded rather than error). When a
// call disagrees with the last check, the provider is checked again (at
// most once per providerChecks.kickedGap).
func (p *preflight) observed(provider string, err error) {
	kick := p.kick[provider]
	if kick == nil {
		return // built-in, or not this snapshot's
	}
	p.mu.Lock()
	last, checked := p.results[provider], p.checked[provider]
	wasUp := p.upLocked(provider)
	if err == nil {
		p.answered[provider] = time.Now()
	} else {
		delete(p.answered, provider)
	}
	up := p.upLocked(provider)
	if checked && up != wasUp {
		p.metrics.ProviderUp.WithLabelValues(provider).Set(up)
	}
	p.mu.Unlock()
	if checked && up != wasUp {
		select { // the agents' health changed with it
		case p.changed <- struct{}{}:
		default:
		}
	}
	if !checked || (last == nil) == (err == nil) {
		return
	}
	select {
	case kick <- struct{}{}:
	default:
	}
}

// answeredLocked reports whether a real call answered after the
// provider's check began failing, within recentAnswer. p.mu is held.
func (p *preflight) answeredLocked(provider string) bool {
	at, since := p.answered[provider], p.failing[provider]
	return !at.IsZero() && !at.Before(since) && time.Since(at) < recentAnswer
}

// upLocked is pallasgw_llm_provider_up: 1 when the check passed, when it
// found the provider answering but not listing a model, or when real
// calls answer though the check fails. p.mu is held.
func (p *preflight) upLocked(provider string) float64 {
	err := p.results[provider]
	if err == nil || errors.Is(err, llm.ErrModelNotListed) || p.answeredLocked(provider) {
		return 1
	}
	return 0
}

// state is what get_health knows of a provider (zero: ok or not run).
func (p *preflight) state(provider string) agents.ProviderState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return agents.ProviderState{Check: p.results[provider], Answered: p.answeredLocked(provider)}
}
