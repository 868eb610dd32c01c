package gateway

import (
	"net/http"
	"slices"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/gateway/console"
	"github.com/pallasgw/pallasgw/policy"
)

// consoleHandler is the web console at "/" (gateway/console), answering
// from the serving snapshot: off (404) when its config says console: false.
func (g *Gateway) consoleHandler(notFound http.Handler) http.Handler {
	return console.New(console.Options{
		Source:    consoleSource{g},
		NotFound:  notFound,
		RequestID: func(r *http.Request) string { return agents.RequestID(r.Context()) },
	})
}

// consoleSource reads the console's answers from the serving snapshot.
type consoleSource struct{ g *Gateway }

func (c consoleSource) Enabled() bool {
	s := c.g.acquire()
	defer s.release()
	return s.cfg.Console
}

func (c consoleSource) OriginAllowed(r *http.Request) bool {
	s := c.g.acquire()
	defer s.release()
	return originAllowed(s.origins, r.Header.Get("Origin"), r.Host)
}

// Agents lists the agents the request's caller may use: those whose
// endpoint would let it in (inbound auth for that agent's resource, then
// the caller's agents rule). Nothing is audited or counted: a listing
// calls no agent. With no token (or a bad one) in mode tokens or jwt the
// answer is the endpoint's 401, so the page asks for a token.
func (c consoleSource) Agents(r *http.Request) (console.Listing, *console.Refusal) {
	s := c.g.acquire()
	defer s.release()
	l := console.Listing{Gateway: s.cfg.Name, AuthMode: s.auth.Mode()}
	var refused *console.Refusal
	for _, name := range s.agents.Names() {
		id, status, reason, _ := s.auth.CheckFor(r, name, s.resourceURL(r, name))
		if status == 0 {
			if id.Claims != nil {
				id.Rule = s.callers.MatchRule(id.Claims)
			}
			if !s.callers.AllowAgent(id.PolicyKey(), name).Allowed {
				continue
			}
			l.Caller = id.Caller
			l.Agents = append(l.Agents, consoleAgent(s.cfg.Agents[name]))
			continue
		}
		if status == http.StatusUnauthorized && refused == nil {
			refused = &console.Refusal{Status: status, Challenge: s.challenge(r, name, status, reason),
				Message: "access denied: " + reason}
		}
	}
	if len(l.Agents) > 0 || refused == nil || s.auth.Mode() == policy.ModePassthrough {
		return l, nil
	}
	return l, refused
}

func consoleAgent(a *config.Agent) console.Agent {
	servers := a.Servers
	if servers == nil {
		servers = []string{}
	}
	subs := slices.Concat(a.Agents, a.Sequence, a.FanOut)
	if a.FanIn != "" && !slices.Contains(subs, a.FanIn) {
		subs = append(subs, a.FanIn)
	}
	toolName := a.ToolName
	if a.Kind == config.KindProxy || a.Kind == config.KindToolbox {
		toolName = ""
	}
	return console.Agent{Name: a.Name, Title: a.Title, Description: a.Description, Kind: a.Kind, Model: a.Model,
		Servers: servers, Agents: subs, Port: a.Port, ToolName: toolName}
}
