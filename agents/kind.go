package agents

// Kinds are plug-ins: each kind's package registers a Factory under its
// name in init (as Caddy's caddy.RegisterModule and CoreDNS's
// plugin.Register do), and the program imports the kind packages. The
// core builds an agent by its kind's Factory and serves what the Kind
// returned; it never asks which kind it holds.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// Factory builds the kind of one agent, handed its Host.
type Factory func(h Host) (Kind, error)

// Kind is what an agent of one kind offers: its tools, prompts and
// resources on the agent's MCP server, and how the agent's endpoint
// reaches them.
type Kind interface {
	// ServerOptions are the kind's options of the agent's MCP server,
	// whose hooks are hooks.
	ServerOptions(hooks *server.Hooks) []server.ServerOption
	// Register adds the kind's tools, prompts and resources to srv, the
	// agent's MCP server, and returns the handler of get_health (nil: the
	// agent's own, Host.Health).
	Register(srv *server.MCPServer) server.ToolHandlerFunc
	// Endpoint sets how the agent's endpoint reaches the kind: the fast
	// tools/call target and the input-required bridge's (d.Fast, d.Rounds)
	// and what else it answers (d.SetLevel, d.Tasks).
	Endpoint(d *endpoint.Deps)
}

// Router is a Kind that decides which tools/calls it dispatches (its
// tools are registered on demand): Route reports why a tools/call of name
// cannot be dispatched for the caller of ctx (nil: it can). For any other
// kind, a name its MCP server lacks is not found.
type Router interface {
	Route(ctx context.Context, name string, inbound http.Header) error
}

// Runner runs one send_message of an agent; a Kind built by
// Host.SendMessage serves it. Sub-agents are run through Agent.Run.
type Runner interface {
	Run(ctx context.Context, c *Call) (string, error)
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Factory{}
)

// Register makes f the factory of the agents of kind. Each kind's package
// calls it in init; registering a kind twice, or no factory, panics.
func Register(kind string, f Factory) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if kind == "" || f == nil {
		panic("agents: Register of an empty kind or a nil factory")
	}
	if _, dup := kinds[kind]; dup {
		panic(fmt.Sprintf("agents: kind %q registered twice", kind))
	}
	kinds[kind] = f
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func factoryOf(kind string) Factory {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return kinds[kind]
}

// sendMessage is the Kind of an agent whose tool is send_message (or its
// tool_name), answered by a Runner (Host.SendMessage).
type sendMessage struct {
	a *Agent
	r Runner
}

func (h host) SendMessage(r Runner) Kind { return &sendMessage{a: h.a, r: r} }

func (k *sendMessage) ServerOptions(*server.Hooks) []server.ServerOption { return nil }

func (k *sendMessage) Register(srv *server.MCPServer) server.ToolHandlerFunc {
	a := k.a
	a.run = k.r
	srv.AddTool(mcp.NewToolWithRawSchema(a.Config.ToolName, a.ToolDescription(), sendMessageSchemaFor(a.Config.Overrides)), endpoint.ToolHandler(a.handleSendMessage))
	srv.AddPrompt(mcp.NewPrompt(a.Name+"_history", mcp.WithPromptDescription("Conversation history (always empty: history lives on the client).")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("History lives on the client; pass it in send_message's history.", []mcp.PromptMessage{}), nil
		})
	return nil
}

func (k *sendMessage) Endpoint(d *endpoint.Deps) {
	a := k.a
	d.Fast = endpoint.Tool{Name: a.Config.ToolName, Handler: a.answerSendMessage, Self: a.self()}
	// Every kind with send_message continues from a checkpoint (the
	// resume.go of agents/kinds/toolloop and workflow), so an
	// input-required round never runs a model turn or a step that has
	// finished twice.
	d.Rounds = d.Fast
}

// Model is an agent's model as the core's model selection made it (its
// config's model: provider, parameters, limits, price): Chat sends one
// request of call c, counted, traced and charged to the agent and the
// caller as the llm kind's model calls are.
type Model interface {
	Chat(ctx context.Context, req llm.Request, c *Call) (*llm.Response, error)
	// For is the model with c's params overrides merged over the agent's
	// (itself when c has none); an ArgumentError when they do not parse.
	For(c *Call) (Model, error)
}

// agentModel is a modelRef bound to the agent it answers for.
type agentModel struct {
	m *modelRef
	a *Agent
}

func (m agentModel) Chat(ctx context.Context, req llm.Request, c *Call) (*llm.Response, error) {
	return m.m.chat(ctx, m.a, req, c)
}

func (m agentModel) For(c *Call) (Model, error) {
	ref, err := c.overrides.model(m.m, m.a.Config.Params)
	if err != nil {
		return nil, err
	}
	return agentModel{m: ref, a: m.a}, nil
}

// SetSchema asks the model of the agent c runs for its answer as JSON of
// schema (an evaluator's rating); a call's own, like its overrides.
func (c *Call) SetSchema(schema *llm.OutputSchema) { c.schema = schema }

// Schema is the schema of the answer the call asks for (nil: text).
func (c *Call) Schema() *llm.OutputSchema { return c.schema }

// Extras are the members the downstream tools/calls of the call's tool
// loop add (mcpclient.CallOptions.Extras; zero: none).
func (c *Call) Extras() mcpclient.CallExtras { return c.extras }

// Step is next, a sub-call of c that runs one of c's steps (a tool call of
// its loop, a workflow's step), whose input requests to the caller are
// keyed under name (wire.Rounds.Scoped) when c is a top-level call, so
// that a replay of that step alone finds its answers.
func (c *Call) Step(next *Call, name string) *Call {
	if c.Depth > 0 {
		return next
	}
	return next.Scoped(name + "-")
}

// Scoped is c whose input requests to the caller are keyed under scope;
// c itself when it is not bridged.
func (c *Call) Scoped(scope string) *Call {
	if c.Rounds == nil {
		return c
	}
	s := *c
	s.Rounds = c.Rounds.Scoped(scope)
	return &s
}

// SetCheckpoint makes fn the checkpoint of the call when the bridge runs
// it (wire.Rounds.SetCheckpoint), and reports whether it did.
func (c *Call) SetCheckpoint(fresh bool, fn func() json.RawMessage) bool {
	return c.Rounds != nil && c.Rounds.SetCheckpoint(fresh, fn)
}

// TakeResume is the checkpoint the call continues from, once (nil: it
// starts afresh, or is not bridged).
func (c *Call) TakeResume() json.RawMessage {
	if c.Rounds == nil {
		return nil
	}
	return c.Rounds.TakeResume()
}

// Unanswered reports an input request of the call that ended without the
// caller's answer (wire.Rounds.Unanswered).
func (c *Call) Unanswered() bool { return c.Rounds != nil && c.Rounds.Unanswered() }

// ErrUnanswered ends a run whose caller was asked for input and never
// answered (Call.Unanswered): the tool loop and the workflows stop on
// it, since nobody will read the run's answer.
var ErrUnanswered = errors.New("the caller did not answer the input request in time")

// Cut shortens s to max bytes (on a UTF-8 boundary) with a note of how
// much was shown: how a tool's or a step's result is bounded for a model.
func Cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	i := max
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", i, len(s))
}
