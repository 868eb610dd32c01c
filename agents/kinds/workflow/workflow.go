// Package workflow is the workflow kinds of agent: chain, router,
// parallel (workflows.go), evaluator_optimizer (evaluator.go) and
// orchestrator (orchestrator.go). Each runs other agents of the set as
// steps, through their send_message (agents.Agent.Run); a router and an
// orchestrator also ask the agent's own model. Their checkpoints for
// input-required rounds are resume.go's.
//
// It owns the workflows' steps, their progress messages and their
// checkpoints. It registers its kinds with the agents core (agents.Register)
// and reaches the gateway only through each agent's agents.Host: it does
// not serve HTTP, call downstream servers or pick models itself.
package workflow

import (
	"strings"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
)

func init() {
	register := func(kind string, newRunner func(a *agent) (agents.Runner, error)) {
		agents.Register(kind, func(h agents.Host) (agents.Kind, error) {
			r, err := newRunner(&agent{agents.NewBase(h)})
			if err != nil {
				return nil, err
			}
			return h.SendMessage(r), nil
		})
	}
	register(config.KindChain, func(a *agent) (agents.Runner, error) { return &chainRunner{a: a}, nil })
	register(config.KindRouter, func(a *agent) (agents.Runner, error) {
		m, err := a.Model()
		if err != nil {
			return nil, err
		}
		return &routerRunner{a: a, model: m}, nil
	})
	register(config.KindParallel, func(a *agent) (agents.Runner, error) { return &parallelRunner{a: a}, nil })
	register(config.KindEvaluatorOptimizer, func(a *agent) (agents.Runner, error) {
		return &evalOptRunner{a: a, min: config.RatingRank(a.Config.MinRating)}, nil
	})
	register(config.KindOrchestrator, func(a *agent) (agents.Runner, error) {
		m, err := a.Model()
		if err != nil {
			return nil, err
		}
		return &orchestratorRunner{a: a, model: m}, nil
	})
}

// agent is a workflow agent as its runners see it.
type agent struct{ *agents.Base }

// Call and Turn are the core's: a send_message call and its turn.
type (
	Call = agents.Call
	Turn = agents.Turn
)

// trimForLog is s cut to n bytes (valid UTF-8) for a log line.
func trimForLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
