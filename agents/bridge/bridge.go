// Package bridge owns the input-required bridge (MCP 2026-07-28 multi
// round-trip requests) of a proxy agent's tools, a toolbox's execute_tool
// and every agent's send_message (the endpoint's Deps.Rounds). A 2026-07-28
// caller cannot take server-to-client requests; when a downstream sends
// elicitation/create, sampling/createMessage or roots/list during its
// tools/call, the caller gets an InputRequiredResult (resultType
// "input_required", inputRequests keyed "<kind>-<n>", a sealed
// requestState: state.go) and retries the call with inputResponses and the
// requestState under a new JSON-RPC id.
//
// The bridge hands the call's kind its round-trip state in the call value
// (wire.Call.Rounds, round.go): the kind's downstream requests to the
// caller go there (Ask), and a kind that continues from a checkpoint
// records and takes it there. It does not decide policy, write the
// caller's response (the endpoint does) or know any kind; of the project it
// imports agents/wire, agents/mcpclient, policy and metrics.
//
//   - The downstream call keeps running, detached from the caller's HTTP
//     request, and waits for the answers (each bounded by the downstream
//     call's timeout and the server-to-client request timeout). It is
//     parked in the gateway's table (Shared: at most maxParked, each until
//     its state expires) under the random id the state carries. A retry
//     that finds it there answers the waiting requests and serves the call
//     from there: its result, another input_required when the downstream
//     asks again, or an error.
//   - A retry on a replica that does not hold the call (or after it ended)
//     replays it: the tool is called again with the same arguments, and the
//     downstream's requests are answered from the state's earlier answers
//     and the retry's inputResponses, matched by kind, params digest and
//     order; a request nothing answers is asked anew.
//   - A downstream that asks for a capability the caller did not declare in
//     _meta's clientCapabilities fails the call with -32021 (HTTP 400). The
//     caller's declared capabilities also go to the downstream in the
//     request's _meta, for servers that read them per request.
//   - A target that continues from a checkpoint (wire.Rounds.SetCheckpoint:
//     an llm agent's tool loop, a workflow's steps; agents/resume.go) is not
//     replayed from the start: the state carries its checkpoint (the
//     conversation so far and the turn's finished tool results; the steps
//     done), and a replica without the waiting call runs the target with it
//     (TakeResume), which re-runs only what was still running, its requests
//     answered as in a replay. Asks are keyed under the tool call or step
//     they come from (Scoped).
//   - A downstream that itself answers input_required (its result carries
//     inputRequests) is passed through: its requests as it keyed them, its
//     requestState sealed inside ours, and given back to it on the retry.
//
// Session-based (2025) callers keep the endpoint's relay of
// server-to-client requests (agents/endpoint callerrequest.go).
package bridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/policy"
)

const (
	// stateTTL is how long a requestState is accepted, and a parked call
	// kept once it has asked.
	stateTTL = 10 * time.Minute
	// maxCallLife bounds a bridged call whatever the downstream's timeout.
	maxCallLife = 10 * time.Minute
	// maxParked bounds the calls parked for a retry; past it a call that
	// asks is still answered input_required, and its retry replays it.
	maxParked = 1024
	// batchQuiet and batchMax: once a request arrives, the bridge waits
	// until no other one has come for batchQuiet (at most batchMax), so that
	// requests a downstream sends together go in one input_required. A
	// round waits for a person or a model, so 100 ms is little beside it;
	// 30 ms split a downstream's three asks over two rounds on a loaded
	// 2-core machine (the conformance suite's multiple-input-requests).
	batchQuiet = 100 * time.Millisecond
	batchMax   = 500 * time.Millisecond
	// maxStateAnswers bounds the bytes of earlier answers a state carries.
	maxStateAnswers = 64 << 10
	// maxCheckpoint bounds the bytes of a target's checkpoint a state
	// carries (an llm agent's conversation); past it the state says so
	// (Lost) and only the replica that holds the call can finish it.
	maxCheckpoint = 1 << 20
)

// Bridge is the Target of a kind's bridged calls (the endpoint's
// Deps.Rounds) for 2026-07-28 callers: other calls go to the kind as they
// are.
type Bridge struct {
	s     *Shared // the gateway's: the sealer, parked calls, metrics, clock
	agent string
	inner wire.Target
	// What inner offers besides a wire.Target (catalog.go); nil, false:
	// not that.
	catalog     Catalog
	passThrough bool // InputRequiredPassThrough
}

// New is the bridge of agent's target inner, with s the gateway's shared
// part, and the optional interfaces of catalog.go inner implements.
func New(s *Shared, agent string, inner wire.Target) *Bridge {
	b := &Bridge{s: s, agent: agent, inner: inner}
	b.catalog, _ = inner.(Catalog)
	_, b.passThrough = inner.(InputRequiredPassThrough)
	return b
}

func (b *Bridge) Answers(name string) bool { return b.inner.Answers(name) }
func (b *Bridge) RawArgs() bool            { return b.inner.RawArgs() }
func (b *Bridge) TakesRoundTrips()         {}

// capSet is the client capabilities a 2026-07-28 caller declared in its
// request's _meta.
type capSet struct{ elicitation, sampling, roots bool }

func (c capSet) has(capability string) bool {
	switch capability {
	case "elicitation":
		return c.elicitation
	case "sampling":
		return c.sampling
	case "roots":
		return c.roots
	}
	return false
}

// Capability is the client capability ("elicitation", "sampling",
// "roots") a caller must have declared for a server-to-client request of
// method; false for a method that is not one the gateway relays.
func Capability(method string) (string, bool) {
	switch mcp.MCPMethod(method) {
	case mcp.MethodElicitationCreate:
		return "elicitation", true
	case mcp.MethodSamplingCreateMessage:
		return "sampling", true
	case mcp.MethodListRoots:
		return "roots", true
	}
	return "", false
}

// Answer runs one round of a 2026-07-28 call.
func (b *Bridge) Answer(ctx context.Context, wc *wire.Call) any {
	if !wc.Modern {
		return b.inner.Answer(ctx, wc)
	}
	req, id := wc.Req, wc.ID
	info := server.RequestProtocolInfoFromContext(ctx)
	var caps capSet
	var rawCaps json.RawMessage
	if info != nil && info.ClientCapabilities != nil {
		c := info.ClientCapabilities
		caps = capSet{elicitation: c.Elicitation != nil, sampling: c.Sampling != nil, roots: c.Roots != nil}
		rawCaps, _ = json.Marshal(c)
	}
	var args string // their digest, only needed for a state
	caller := policy.IdentityFrom(ctx).Principal()
	var st *roundState
	var responses map[string]json.RawMessage
	if rt := wc.RoundTrip; rt != nil {
		var err error
		if responses, err = parseResponses(rt.InputResponses); err != nil {
			b.s.rejected("inputResponses")
			return errAnswer(id, mcp.INVALID_PARAMS, "invalid inputResponses: "+err.Error(), nil)
		}
		if len(rt.RequestState) > 0 {
			var text string
			if json.Unmarshal(rt.RequestState, &text) != nil {
				b.s.rejected(stateInvalid)
				return errAnswer(id, mcp.INVALID_PARAMS, "invalid requestState: must be a string", nil)
			}
			if st, err = b.s.open(text, b.agent); err == nil {
				args = digest(rawArgs(req))
			}
			if err == nil && (st.Tool != req.Params.Name || st.Args != args) {
				err = &stateError{stateMismatch, "invalid requestState: it was issued for another tool or other arguments"}
			}
			if err == nil && st.Caller != caller {
				// The state is no bearer token: only its caller finishes
				// the call decided, credentialed and checkpointed for it.
				err = &stateError{stateMismatch, "invalid requestState: it was issued to another caller"}
			}
			if err != nil {
				se, _ := err.(*stateError)
				b.s.rejected(se.reason)
				return errAnswer(id, mcp.INVALID_PARAMS, err.Error(), nil)
			}
		}
		// Without a requestState the answers answer nothing this gateway
		// asked: they are ignored (the call starts afresh).
	}
	var extras mcpclient.CallExtras
	if rawCaps != nil {
		extras.Meta = map[string]json.RawMessage{mcp.MetaKeyClientCapabilities: rawCaps}
	}
	call := &inputCall{b: b, tool: req.Params.Name, req: req, args: args, caller: caller, caps: caps, wake: make(chan struct{}, 1)}
	switch {
	case st != nil && st.IsNat:
		extras.Params = map[string]json.RawMessage{"requestState": mustJSON(st.Native)}
		if len(responses) > 0 {
			extras.Params["inputResponses"] = mustJSON(responses)
		}
		b.s.count("passed_back")
	case st != nil:
		if parked := b.s.unpark(st.ID); parked != nil {
			if ans := parked.deliver(st, responses, id); ans != nil {
				return ans
			}
			b.s.count("resumed")
			return parked.serve(ctx, id, false)
		}
		if st.Lost {
			b.s.rejected(stateLost)
			return errAnswer(id, mcp.INVALID_PARAMS, "requestState can no longer be served: the call it continues has ended, "+
				"and its conversation was too large to carry in the state; call the tool again without it", nil)
		}
		call.replay, call.resume = replayAnswers(st, responses), st.Resume
		b.s.count("replayed")
	}
	return call.start(ctx, wc, extras)
}
