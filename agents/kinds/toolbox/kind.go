package toolbox

// The toolbox as a registered kind (agents.Register): its factory builds
// the toolbox's Deps from the agent's Host.

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/policy"
)

func init() { agents.Register(config.KindToolbox, newKind) }

// kind is a toolbox as the agents core serves it: Register builds it on
// the agent's server, and its execute_tool is the endpoint's target.
type kind struct {
	d           Deps
	executeTool *Target
}

var _ agents.Kind = (*kind)(nil)

// newKind is the toolbox kind's agents.Factory.
func newKind(h agents.Host) (agents.Kind, error) {
	c, g := h.Config(), h.Gateway()
	emb, vecs := h.SearchEmbeddings()
	return &kind{d: Deps{Host: h, SearchEmbedder: emb, SearchVectors: vecs, Agent: h.Name(), Self: h.Self(), Servers: c.Servers, Tools: c.Tools,
		Transports: g.MCP.Servers, Passthrough: g.Auth.Mode == policy.ModePassthrough, Logger: h.Logger(), Downstream: h.Downstream(),
		Callers: h.Callers(), Auditor: h.Auditor(), GatewayStatus: c.GatewayStatus, Script: h.Script()}}, nil
}

func (k *kind) ServerOptions(*server.Hooks) []server.ServerOption { return nil }

// Register adds the toolbox's tools to srv; get_health is the agent's own.
func (k *kind) Register(srv *server.MCPServer) server.ToolHandlerFunc {
	k.executeTool = Register(srv, k.d)
	return nil
}

// Endpoint makes execute_tool the endpoint's fast and bridged target.
func (k *kind) Endpoint(d *endpoint.Deps) { d.Fast, d.Rounds = k.executeTool, k.executeTool }
