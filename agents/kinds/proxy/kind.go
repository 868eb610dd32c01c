package proxy

// The proxy as a registered kind (agents.Register): its factory builds a
// Proxy from the agent's Host.

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/gateway/config"
)

func init() { agents.Register(config.KindProxy, newKind) }

// kind is a Proxy as the agents core serves it.
type kind struct{ *Proxy }

var (
	_ agents.Kind   = kind{}
	_ agents.Router = kind{}
)

// newKind is the proxy kind's agents.Factory.
func newKind(h agents.Host) (agents.Kind, error) {
	c := h.Config()
	emb, vecs := h.SearchEmbeddings()
	p, err := New(Deps{Host: h, SearchEmbedder: emb, SearchVectors: vecs, Agent: h.Name(), Self: h.Self(), Servers: c.Servers, Tools: c.Tools,
		Logger: h.Logger(), Metrics: h.Metrics(), Downstream: h.Downstream(), Callers: h.Callers(), Auditor: h.Auditor(),
		TaskIndex: h.TaskIndex(), ToolSearch: c.ToolSearch.On()})
	if err != nil {
		return nil, err
	}
	return kind{p}, nil
}

// Register adds the proxy's tools to srv; its get_health is CallTool: a
// downstream tool named get_health wins over the agent's own.
func (k kind) Register(srv *server.MCPServer) server.ToolHandlerFunc {
	k.Proxy.Register(srv)
	return endpoint.ToolHandler(k.CallTool)
}

// Endpoint makes the proxy the endpoint's fast and bridged target, the
// answerer of logging/setLevel and the router of tasks.
func (k kind) Endpoint(d *endpoint.Deps) {
	d.Fast, d.SetLevel, d.Rounds, d.Tasks = k.Proxy, k.Proxy, k.Proxy, k.Proxy
}
