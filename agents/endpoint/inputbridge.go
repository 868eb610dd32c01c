package endpoint

// The input-required bridge (MCP 2026-07-28 multi round-trip requests) of
// a proxy agent's tools, a toolbox's execute_tool and every agent's
// send_message (Deps.Rounds). A 2026-07-28 caller cannot take
// server-to-client requests; when a downstream sends elicitation/create,
// sampling/createMessage or roots/list during its tools/call, the caller
// gets an InputRequiredResult (resultType "input_required", inputRequests
// keyed "<kind>-<n>", a sealed requestState: state.go) and retries the call
// with inputResponses and the requestState under a new JSON-RPC id.
//
//   - The downstream call keeps running, detached from the caller's HTTP
//     request, and waits for the answers (each bounded by the downstream
//     call's timeout and the server-to-client request timeout). It is
//     parked in the gateway's table (CallerRequests: at most maxParked,
//     each until its state expires) under the random id the state carries.
//     A retry that finds it there answers the waiting requests and serves
//     the call from there: its result, another input_required when the
//     downstream asks again, or an error.
//   - A retry on a replica that does not hold the call (or after it ended)
//     replays it: the tool is called again with the same arguments, and the
//     downstream's requests are answered from the state's earlier answers
//     and the retry's inputResponses, matched by kind, params digest and
//     order; a request nothing answers is asked anew.
//   - A downstream that asks for a capability the caller did not declare in
//     _meta's clientCapabilities fails the call with -32021 (HTTP 400). The
//     caller's declared capabilities also go to the downstream in the
//     request's _meta, for servers that read them per request.
//   - A target that continues from a checkpoint (SetCheckpoint: an llm
//     agent's tool loop, a workflow's steps; agents/resume.go) is not
//     replayed from the start: the state carries its checkpoint (the
//     conversation so far and the turn's finished tool results; the steps
//     done), and a replica without the waiting call runs the target with it
//     (TakeResume), which re-runs only what was still running, its requests
//     answered as in a replay. Asks are keyed under the tool call or step
//     they come from (WithAskScope).
//   - A downstream that itself answers input_required (its result carries
//     inputRequests) is passed through: its requests as it keyed them, its
//     requestState sealed inside ours, and given back to it on the retry.
//
// Session-based (2025) callers keep the relay of callerrequest.go.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
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

// inputBridge is the fast-path Target of Deps.Rounds for 2026-07-28 calls.
type inputBridge struct {
	e     *Endpoint
	inner wire.Target
	// What inner offers besides a wire.Target (kinds.go); nil, false: not
	// that.
	ensure      ToolEnsurer
	params      ParamHeaderChecker
	catalog     BridgedCatalog
	passThrough bool // InputRequiredPassThrough
}

// newInputBridge is the bridge of inner, with the optional interfaces of
// kinds.go it implements.
func newInputBridge(e *Endpoint, inner wire.Target) *inputBridge {
	b := &inputBridge{e: e, inner: inner}
	b.ensure, _ = inner.(ToolEnsurer)
	b.params, _ = inner.(ParamHeaderChecker)
	b.catalog, _ = inner.(BridgedCatalog)
	_, b.passThrough = inner.(InputRequiredPassThrough)
	return b
}

func (b *inputBridge) Answers(name string) bool { return b.inner.Answers(name) }
func (b *inputBridge) RawArgs() bool            { return b.inner.RawArgs() }
func (b *inputBridge) TakesRoundTrips()         {}

// inputCall is one bridged downstream call.
type inputCall struct {
	b      *inputBridge
	id     string
	tool   string
	req    mcp.CallToolRequest
	args   string // digest of req's arguments, once needed (argsDigest)
	caller string // the caller's principal: only it may continue the call
	caps   capSet
	cancel context.CancelFunc
	wake   chan struct{} // buffered 1: an ask arrived, or the call ended

	mu         sync.Mutex
	asks       []*inputAsk           // unanswered, in arrival order
	seq        map[string]int        // asks so far, by scope and method
	replay     map[string]askedInput // answers to give again (a replay), by key
	prior      map[string]askedInput // answered so far, with the answers
	final      any                   // the target's answer (to the first round's id), once done
	failed     *wire.CallerError     // a capability the caller lacks
	exp        time.Time
	checkpoint func() json.RawMessage // the target's (SetCheckpoint), or nil
	resume     json.RawMessage        // a checkpoint to continue from (TakeResume), or nil
	unanswered bool                   // an ask's wait ended without an answer
}

// inputAsk is one request of the downstream waiting for the caller.
type inputAsk struct {
	key, method string
	params      json.RawMessage
	digest      string
	answer      chan json.RawMessage // buffered 1
}

type capSet struct{ elicitation, sampling, roots bool }

func (c capSet) has(letter byte) bool {
	switch letter {
	case capElicitation:
		return c.elicitation
	case capSampling:
		return c.sampling
	case capRoots:
		return c.roots
	}
	return false
}

// Answer runs one round of a 2026-07-28 call.
func (b *inputBridge) Answer(ctx context.Context, wc *wire.Call) any {
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
			b.e.d.Requests.rejected("inputResponses")
			return errAnswer(id, mcp.INVALID_PARAMS, "invalid inputResponses: "+err.Error(), nil)
		}
		if len(rt.RequestState) > 0 {
			var text string
			if json.Unmarshal(rt.RequestState, &text) != nil {
				b.e.d.Requests.rejected(stateInvalid)
				return errAnswer(id, mcp.INVALID_PARAMS, "invalid requestState: must be a string", nil)
			}
			if st, err = b.e.d.Requests.open(text, b.e.d.Agent); err == nil {
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
				b.e.d.Requests.rejected(se.reason)
				return errAnswer(id, mcp.INVALID_PARAMS, err.Error(), nil)
			}
		}
		// Without a requestState the answers answer nothing this gateway
		// asked: they are ignored (the call starts afresh).
	}
	extras := &mcpclient.CallExtras{}
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
		b.e.d.Requests.count("passed_back")
	case st != nil:
		if parked := b.e.d.Requests.unpark(st.ID); parked != nil {
			if ans := parked.deliver(st, responses, id); ans != nil {
				return ans
			}
			b.e.d.Requests.count("resumed")
			return parked.serve(ctx, id, false)
		}
		if st.Lost {
			b.e.d.Requests.rejected(stateLost)
			return errAnswer(id, mcp.INVALID_PARAMS, "requestState can no longer be served: the call it continues has ended, "+
				"and its conversation was too large to carry in the state; call the tool again without it", nil)
		}
		call.replay, call.resume = replayAnswers(st, responses), st.Resume
		b.e.d.Requests.count("replayed")
	}
	return call.start(ctx, wc, extras)
}

// start runs the downstream call detached from the caller's request and
// serves its first round.
func (c *inputCall) start(ctx context.Context, wc *wire.Call, extras *mcpclient.CallExtras) any {
	c.id = newCallID()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxCallLife)
	c.cancel = cancel
	cctx = withScope(cctx, func(s *Scope) { s.call = c })
	inner := *wc
	inner.ExtraParams, inner.ExtraMeta = extras.Params, extras.Meta // the downstream call's members
	go func() {
		ans := c.kept(c.b.inner.Answer(cctx, &inner), cancel)
		c.mu.Lock()
		c.final = ans
		for _, a := range c.asks { // the call ended: nobody answers these
			close(a.answer)
		}
		c.asks = nil
		c.mu.Unlock()
		// A call that ends while parked (its caller never retried, or the
		// downstream gave up waiting) leaves the table: a late retry replays.
		c.b.e.d.Requests.drop(c)
		c.signal()
	}()
	return c.serve(ctx, wc.ID, true)
}

// kept is ans, the target's answer, as the call keeps it, and ends the
// call's context (cancel) unless that answer still reads from it. A large
// result streamed from the downstream's body (wire.BodyAnswer) stays so
// while it may be the answer to the request it began on, copied as it is
// read: nothing was asked of the caller and nothing failed; its context
// ends when it is closed (or when the call is given up: c.cancel).
// Otherwise the bridge answers, maybe in a later round under another id:
// the result is read whole first.
func (c *inputCall) kept(ans any, cancel context.CancelFunc) any {
	if ba, ok := ans.(*wire.BodyAnswer); ok {
		c.mu.Lock()
		first := c.failed == nil && len(c.asks) == 0 && c.seq == nil
		c.mu.Unlock()
		if first {
			ba.Result.OnClose(func(error) { cancel() })
			return ans
		}
		ans = ba.Held()
	}
	cancel()
	return ans
}

// argsDigest is the digest of the call's arguments. c.mu is held.
func (c *inputCall) argsDigest() string {
	if c.args == "" {
		c.args = digest(rawArgs(c.req))
	}
	return c.args
}

func (c *inputCall) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// ask is the downstream's request (method, params) during the call: it
// waits for the caller's answer, given in a later round.
func (c *inputCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	letter, ok := callerCapability(method)
	if !ok {
		return nil, &mcpclient.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("%s is not relayed", method)}
	}
	name := capabilityName(letter)
	c.mu.Lock()
	if !c.caps.has(letter) {
		if c.failed == nil {
			c.failed = &wire.CallerError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
				Message: fmt.Sprintf("the downstream needs the %s client capability, which the request did not declare", name),
				Data:    map[string]any{"requiredCapabilities": map[string]any{name: map[string]any{}}}}
		}
		c.mu.Unlock()
		c.signal()
		return nil, &mcpclient.RPCError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
			Message: fmt.Sprintf("the caller did not declare the %s capability", name)}
	}
	scope := ScopeFrom(ctx).askScope
	if c.seq == nil {
		c.seq, c.prior = map[string]int{}, map[string]askedInput{}
	}
	c.seq[scope+"\x00"+method]++
	key := fmt.Sprintf("%s%s-%d", scope, name, c.seq[scope+"\x00"+method])
	d := digest(params)
	if r, ok := c.takeReplay(key, method, d); ok {
		c.prior[key] = askedInput{M: method, D: d, R: r}
		c.mu.Unlock()
		return r, nil
	}
	a := &inputAsk{key: key, method: method, params: params, digest: d, answer: make(chan json.RawMessage, 1)}
	c.asks = append(c.asks, a)
	c.mu.Unlock()
	c.signal()
	select {
	case r, ok := <-a.answer:
		if !ok {
			return nil, errCallEnded
		}
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		c.unanswered = true
		c.mu.Unlock()
		return nil, fmt.Errorf("waiting for the caller's answer to %s: %w", method, context.Cause(ctx))
	}
}

var errCallEnded = fmt.Errorf("the call has ended")

// takeReplay finds the answer a replayed call gives again: same method and
// params digest first (same key preferred), then the same key.
func (c *inputCall) takeReplay(key, method, d string) (json.RawMessage, bool) {
	if len(c.replay) == 0 {
		return nil, false
	}
	pick := ""
	if r, ok := c.replay[key]; ok && r.M == method && r.D == d {
		pick = key
	} else {
		for _, k := range slices.Sorted(maps.Keys(c.replay)) {
			if r := c.replay[k]; r.M == method && r.D == d {
				pick = k
				break
			}
		}
		if r, ok := c.replay[key]; pick == "" && ok && r.M == method {
			pick = key
		}
	}
	if pick == "" {
		return nil, false
	}
	r := c.replay[pick].R
	delete(c.replay, pick)
	return r, true
}

// deliver gives a retry's answers to the parked call's waiting requests.
// It returns an error answer when one does not fit its request (the call
// is then cancelled), else nil.
func (c *inputCall) deliver(st *roundState, responses map[string]json.RawMessage, id any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	matched := matchResponses(c.asks, responses)
	for a, r := range matched {
		if err := fits(a.method, r); err != nil {
			c.cancel()
			return errAnswer(id, mcp.INVALID_PARAMS, fmt.Sprintf("invalid inputResponses[%q]: %v", a.key, err), nil)
		}
	}
	if c.prior == nil {
		c.prior = map[string]askedInput{}
	}
	rest := c.asks[:0]
	for _, a := range c.asks {
		if r, ok := matched[a]; ok {
			c.prior[a.key] = askedInput{M: a.method, D: a.digest, R: r}
			a.answer <- r
			continue
		}
		rest = append(rest, a)
	}
	c.asks = rest
	return nil
}

// matchResponses pairs the asks with responses: by key, then each ask left
// with the first (by key) response not matched yet whose shape fits its
// kind, in order.
func matchResponses(asks []*inputAsk, responses map[string]json.RawMessage) map[*inputAsk]json.RawMessage {
	out := map[*inputAsk]json.RawMessage{}
	used := map[string]bool{}
	for _, a := range asks {
		if r, ok := responses[a.key]; ok {
			out[a], used[a.key] = r, true
		}
	}
	keys := slices.Sorted(maps.Keys(responses))
	for _, a := range asks {
		if _, ok := out[a]; ok {
			continue
		}
		for _, k := range keys {
			if !used[k] && fits(a.method, responses[k]) == nil {
				out[a], used[k] = responses[k], true
				break
			}
		}
	}
	return out
}

// replayAnswers are the answers a replay of st's call gives: earlier
// rounds', and this retry's for the requests st names.
func replayAnswers(st *roundState, responses map[string]json.RawMessage) map[string]askedInput {
	out := map[string]askedInput{}
	for k, v := range st.Prior {
		out[k] = v
	}
	asks := make([]*inputAsk, 0, len(st.Asked))
	for _, k := range slices.Sorted(maps.Keys(st.Asked)) {
		v := st.Asked[k]
		asks = append(asks, &inputAsk{key: k, method: v.M, digest: v.D})
	}
	for a, r := range matchResponses(asks, responses) {
		if fits(a.method, r) == nil {
			out[a.key] = askedInput{M: a.method, D: a.digest, R: r}
		}
	}
	return out
}

// serve waits for what the call does next and answers this round's
// request (id; first: the request that started the call) with it.
func (c *inputCall) serve(ctx context.Context, id any, first bool) any {
	for {
		c.mu.Lock()
		failed, final, pending := c.failed, c.final, len(c.asks)
		c.mu.Unlock()
		switch {
		case failed != nil:
			c.cancel()
			return errAnswer(id, failed.Code, failed.Message, failed.Data)
		case final != nil:
			return c.finished(final, id, first)
		case pending > 0:
			c.gather(ctx)
			c.mu.Lock()
			if c.failed != nil || c.final != nil {
				c.mu.Unlock()
				continue
			}
			ans := c.inputRequired(id)
			c.mu.Unlock()
			c.b.e.d.Requests.park(c)
			c.mu.Lock()
			ended := c.final != nil
			c.mu.Unlock()
			if ended { // it ended meanwhile, before park: its drop found nothing
				c.b.e.d.Requests.drop(c)
			}
			return ans
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			c.cancel() // the caller went away before anything was asked
			return errAnswer(id, mcp.INTERNAL_ERROR, "the caller's request ended", nil)
		}
	}
}

// gather waits for the requests a downstream sends together.
func (c *inputCall) gather(ctx context.Context) {
	deadline := time.NewTimer(batchMax)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := len(c.asks)
		c.mu.Unlock()
		quiet := time.NewTimer(batchQuiet)
		select {
		case <-c.wake:
			quiet.Stop()
			c.mu.Lock()
			grew, over := len(c.asks) > n, c.final != nil || c.failed != nil
			c.mu.Unlock()
			if over {
				c.signal()
				return
			}
			if !grew {
				return // woken by nothing new
			}
			continue
		case <-quiet.C:
			return
		case <-deadline.C:
			quiet.Stop()
			return
		case <-ctx.Done():
			quiet.Stop()
			return
		}
	}
}

// inputRequired is the answer that asks the caller for the waiting
// requests. c.mu is held.
func (c *inputCall) inputRequired(id any) any {
	c.exp = c.b.e.d.Requests.now().Add(stateTTL)
	st := &roundState{ID: c.id, Agent: c.b.e.d.Agent, Caller: c.caller, Tool: c.tool, Args: c.argsDigest(), Exp: c.exp.Unix(),
		Asked: map[string]askedInput{}, Prior: map[string]askedInput{}}
	requests := map[string]json.RawMessage{}
	for _, a := range c.asks {
		st.Asked[a.key] = askedInput{M: a.method, D: a.digest}
		// params always, {} when the downstream sent none (roots/list): the
		// Go SDK client (v1.8.0) fails to read an input request without.
		req := map[string]json.RawMessage{"method": mustJSON(a.method), "params": json.RawMessage(`{}`)}
		if len(a.params) > 0 && string(a.params) != "null" {
			req["params"] = a.params
		}
		requests[a.key] = mustJSON(req)
	}
	size := 0
	for k, v := range c.prior {
		if size += len(v.R); size > maxStateAnswers {
			break // a replay asks these again
		}
		st.Prior[k] = v
	}
	if c.checkpoint != nil {
		if cp := c.checkpoint(); len(cp) <= maxCheckpoint {
			st.Resume = cp
		} else {
			st.Lost = true // only the replica that holds the call can finish it
		}
	}
	c.b.e.d.Requests.count("asked")
	return resultAnswer(id, map[string]any{"resultType": mcp.ResultTypeInputRequired, "inputRequests": requests,
		"requestState": c.b.e.d.Requests.sealer().seal(st)})
}

// finished answers the call's end: its answer under id, or, when the
// downstream itself answered input_required, that passed through.
func (c *inputCall) finished(ans any, id any, first bool) any {
	if ba, ok := ans.(*wire.BodyAnswer); ok {
		if first { // copied to the request it began on (kept)
			return ans
		}
		ans = ba.Held()
	}
	if rf, ok := ans.(wire.Refusal); ok { // refused before it ran: its HTTP status kept
		rf.ID = mcp.NewRequestId(id)
		return rf
	}
	raw, isRaw := ans.(wire.RawAnswer)
	if first && (!c.b.passThrough || (isRaw && !bytes.Contains(raw, []byte(`"inputRequests"`)))) {
		// Already the answer to id, and only an InputRequiredPassThrough (a
		// proxy) passes a downstream's own input_required through. A raw
		// answer is one only when it carries inputRequests: wire.RawResponse
		// declines a result typed input_required, but a downstream that
		// leaves out resultType (a 2025-era session's second round, as
		// go-sdk's multi round-trip middleware answers it) comes as bytes.
		return ans
	}
	final, err := answerJSON(ans)
	if err != nil {
		return errAnswer(id, mcp.INTERNAL_ERROR, "encoding the answer: "+err.Error(), nil)
	}
	var msg struct {
		Result *struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  *string                    `json:"requestState"`
		} `json:"result"`
	}
	if json.Unmarshal(final, &msg) == nil && msg.Result != nil && msg.Result.InputRequests != nil {
		c.mu.Lock()
		args := c.argsDigest()
		c.mu.Unlock()
		st := &roundState{Agent: c.b.e.d.Agent, Caller: c.caller, Tool: c.tool, Args: args, Exp: c.b.e.d.Requests.now().Add(stateTTL).Unix(), IsNat: true}
		if msg.Result.RequestState != nil {
			st.Native = *msg.Result.RequestState
		}
		for k, r := range msg.Result.InputRequests {
			var req struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(r, &req) != nil {
				continue
			}
			if letter, ok := callerCapability(req.Method); ok && !c.caps.has(letter) {
				name := capabilityName(letter)
				return errAnswer(id, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
					fmt.Sprintf("the downstream needs the %s client capability, which the request did not declare", name),
					map[string]any{"requiredCapabilities": map[string]any{name: map[string]any{}}})
			}
			_ = k
		}
		c.b.e.d.Requests.count("passed_through")
		return resultAnswer(id, map[string]any{"resultType": mcp.ResultTypeInputRequired,
			"inputRequests": msg.Result.InputRequests, "requestState": c.b.e.d.Requests.sealer().seal(st)})
	}
	return wire.AnswerWithID(final, id)
}

// parseResponses reads a retry's inputResponses: an object whose members
// are objects (absent: none).
func parseResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, errNotObject
	}
	for k, v := range m {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("%q: %w", k, errNotObject)
		}
	}
	return m, nil
}

// fits checks that r has the shape of a result of method.
func fits(method string, r json.RawMessage) error {
	var probe struct {
		Action  *string          `json:"action"`
		Role    *string          `json:"role"`
		Content json.RawMessage  `json:"content"`
		Roots   *json.RawMessage `json:"roots"`
	}
	if json.Unmarshal(r, &probe) != nil {
		return errNotObject
	}
	switch mcp.MCPMethod(method) {
	case mcp.MethodElicitationCreate:
		if probe.Action == nil {
			return fmt.Errorf("an elicitation result needs an action")
		}
	case mcp.MethodSamplingCreateMessage:
		if probe.Role == nil || len(probe.Content) == 0 {
			return fmt.Errorf("a sampling result needs a role and content")
		}
	case mcp.MethodListRoots:
		if probe.Roots == nil || len(*probe.Roots) == 0 || (*probe.Roots)[0] != '[' {
			return fmt.Errorf("a roots result needs a roots array")
		}
	}
	return nil
}

func newCallID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// rawArgs are the call's arguments as JSON, for their digest.
func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if raw := bytes.TrimSpace(req.Params.RawArguments); len(raw) > 0 {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			b, _ := json.Marshal(v) // canonical: sorted members
			return b
		}
		return raw
	}
	b, _ := json.Marshal(req.GetArguments())
	return b
}

// answerJSON is a Target's answer as JSON.
func answerJSON(ans any) (json.RawMessage, error) {
	if raw, ok := ans.(wire.RawAnswer); ok {
		return json.RawMessage(raw), nil
	}
	return json.Marshal(ans)
}

func errAnswer(id any, code int, msg string, data any) any {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Error: mcp.NewJSONRPCErrorDetails(code, msg, data)}
}

func resultAnswer(id any, result map[string]any) any {
	return mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Result: result}
}
