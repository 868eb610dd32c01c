package bridge

// One bridged call: its downstream call running detached from the
// caller's request, the requests it asks the caller (each an input request
// of a round), and the rounds that answer the caller.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// inputCall is one bridged downstream call.
type inputCall struct {
	b      *Bridge
	id     string
	tool   string
	req    mcp.CallToolRequest
	args   string // digest of req's arguments, once needed (argsDigest)
	caller string // the caller's principal: only it may continue the call
	caps   capSet
	cancel context.CancelFunc
	inline bool          // running on the request's goroutine (startInline); set before the call starts
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

// start runs the downstream call detached from the caller's request and
// serves its first round; a call that cannot ask its caller anything runs
// on the request's goroutine instead (startInline).
func (c *inputCall) start(ctx context.Context, wc *wire.Call, extras mcpclient.CallExtras) any {
	inner := *wc
	inner.ExtraParams, inner.ExtraMeta = extras.Params, extras.Meta // the downstream call's members
	inner.Rounds = round{c: c}                                      // where the kind's requests to the caller go (round.go)
	if c.caps == (capSet{}) && c.replay == nil && c.resume == nil {
		return c.startInline(ctx, &inner, wc.ID)
	}
	c.id = newCallID()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxCallLife)
	c.cancel = cancel
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
		c.b.s.drop(c)
		c.signal()
	}()
	return c.serve(ctx, wc.ID, true)
}

// startInline runs a fresh call whose caller declared none of the
// capabilities a downstream's request needs (elicitation, sampling,
// roots) on the request's goroutine: every ask fails at once (ask: -32021
// to the caller, the call cancelled), so nothing of the call outlives its
// request, and no goroutine nor random id is needed. The caller's answer is
// the one serve gives such a call: the missing capability's error when
// one was asked for, else the target's answer (finished).
func (c *inputCall) startInline(ctx context.Context, inner *wire.Call, id any) any {
	cctx, cancel := context.WithTimeout(ctx, maxCallLife)
	c.cancel, c.inline = cancel, true
	ans := c.b.inner.Answer(cctx, inner)
	c.mu.Lock()
	failed := c.failed
	c.mu.Unlock()
	if failed != nil {
		cancel()
		if ba, ok := ans.(*wire.BodyAnswer); ok {
			ba.Result.Close()
		}
		return errAnswer(id, failed.Code, failed.Message, failed.Data)
	}
	if ba, ok := ans.(*wire.BodyAnswer); ok { // copied to this request, which ends the context when closed (kept)
		ba.Result.OnClose(func(error) { cancel() })
		return c.finished(ans, id, true)
	}
	cancel()
	return c.finished(ans, id, true)
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

// ask is the downstream's request (method, params) during the call, keyed
// under scope (round.Scoped): it waits for the caller's answer, given in a
// later round.
func (c *inputCall) ask(ctx context.Context, scope, method string, params json.RawMessage) (json.RawMessage, error) {
	name, ok := Capability(method)
	if !ok {
		return nil, &mcpclient.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("%s is not relayed", method)}
	}
	c.mu.Lock()
	if !c.caps.has(name) {
		if c.failed == nil {
			c.failed = &wire.CallerError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
				Message: fmt.Sprintf("the downstream needs the %s client capability, which the request did not declare", name),
				Data:    map[string]any{"requiredCapabilities": map[string]any{name: map[string]any{}}}}
		}
		c.mu.Unlock()
		c.signal()
		if c.inline { // no serve loop to end the call: end it here (startInline)
			c.cancel()
		}
		return nil, &mcpclient.RPCError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
			Message: fmt.Sprintf("the caller did not declare the %s capability", name)}
	}
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
			c.b.s.park(c)
			c.mu.Lock()
			ended := c.final != nil
			c.mu.Unlock()
			if ended { // it ended meanwhile, before park: its drop found nothing
				c.b.s.drop(c)
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
	c.exp = c.b.s.now().Add(stateTTL)
	st := &roundState{ID: c.id, Agent: c.b.agent, Caller: c.caller, Tool: c.tool, Args: c.argsDigest(), Exp: c.exp.Unix(),
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
	c.b.s.count("asked")
	return resultAnswer(id, map[string]any{"resultType": mcp.ResultTypeInputRequired, "inputRequests": requests,
		"requestState": c.b.s.Sealer.seal(st)})
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
		st := &roundState{Agent: c.b.agent, Caller: c.caller, Tool: c.tool, Args: args, Exp: c.b.s.now().Add(stateTTL).Unix(), IsNat: true}
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
			if name, ok := Capability(req.Method); ok && !c.caps.has(name) {
				return errAnswer(id, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY,
					fmt.Sprintf("the downstream needs the %s client capability, which the request did not declare", name),
					map[string]any{"requiredCapabilities": map[string]any{name: map[string]any{}}})
			}
			_ = k
		}
		c.b.s.count("passed_through")
		return resultAnswer(id, map[string]any{"resultType": mcp.ResultTypeInputRequired,
			"inputRequests": msg.Result.InputRequests, "requestState": c.b.s.Sealer.seal(st)})
	}
	return wire.AnswerWithID(final, id)
}
