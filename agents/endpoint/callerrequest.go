package endpoint

// Server-to-client requests the endpoint sends a caller itself: a proxied
// downstream's elicitation/create, sampling/createMessage and roots/list
// (see endpoint.go for why not through mcp-go). Each goes on the response stream of the caller's
// request it is for, with an id of the endpoint's own, and waits for the
// caller's answer, which Endpoint.ServeHTTP hands to CallerRequests.take
// before mcp-go sees it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics"
)

// requestIDPrefix starts the ids of the endpoint's own requests; mcp-go's
// are numbers.
const requestIDPrefix = "pgw-r-"

// maxWaiting bounds the requests waiting for an answer, over all callers.
// Each belongs to a running call, so the bound is only reached under a flood
// of them; the next one is refused.
const maxWaiting = 1024

// pendingRequest is one request waiting for its caller's answer.
type pendingRequest struct {
	sessionID string               // the answer must come with it
	answer    chan json.RawMessage // the caller's JSON-RPC response; buffered, one
}

// callerCapability is the capability letter a caller must have declared
// for method.
func callerCapability(method string) (byte, bool) {
	switch mcp.MCPMethod(method) {
	case mcp.MethodElicitationCreate:
		return capElicitation, true
	case mcp.MethodSamplingCreateMessage:
		return capSampling, true
	case mcp.MethodListRoots:
		return capRoots, true
	}
	return 0, false
}

// Sequencer orders a request the endpoint writes on a caller's response
// with the call's notifications: Exclusive runs write once every
// notification sent so far is written, holds further ones back meanwhile,
// and refuses once the call has ended (*proxy.Relay; package agents'
// Reporter for the tool loop's progress).
type Sequencer interface {
	Exclusive(ctx context.Context, write func() error) error
}

// Request sends method with params to the caller of the request of ctx, on
// that request's response stream, and returns the caller's result; for a
// 2026-07-28 caller of a bridged call (Deps.Rounds) it becomes an
// input_required round instead (inputbridge.go). seq orders the request
// with the call's notifications (never into one); it may be nil on the
// fast path, whose stream orders the write itself. Reasons it cannot be
// sent are *mcpclient.RPCError (for the downstream that asked), as is the
// caller's own error answer.
func (e *Endpoint) Request(ctx context.Context, seq Sequencer, method string, params json.RawMessage) (json.RawMessage, error) {
	if call := ScopeFrom(ctx).call; call != nil { // a 2026-07-28 caller's: input-required (inputbridge.go)
		return call.ask(ctx, method, params)
	}
	sc, fs := ScopeFrom(ctx), wire.StreamFrom(ctx)
	rs, t := sc.state, sc.Tracker
	err := canRequest(rs, t, method, params)
	if err == nil && seq == nil && fs == nil {
		// Without a sequencer the write cannot be ordered with mcp-go's
		// writes of the call's notifications. The fast path's stream
		// orders it itself: after the notifications it took, never after
		// the answer.
		err = errors.New("the call has no notification stream")
	}
	if err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INVALID_REQUEST,
			Message: fmt.Sprintf("%s is not available through pallasgw for this call: %v", method, err)}
	}
	reqs := e.d.Requests
	id, wait, err := reqs.expect(rs.sessionID)
	if err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
	}
	defer reqs.forget(id)
	msg, err := wire.RequestJSON(id, method, params)
	if err != nil {
		return nil, err
	}
	write := func() error { return t.w.Inject(msg) } // on the fast path, ordered by its stream
	send := write
	if seq != nil {
		send = func() error { return seq.Exclusive(ctx, write) }
	}
	if err := send(); err != nil {
		return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR,
			Message: fmt.Sprintf("%s could not be sent to the caller: %v", method, err)}
	}
	// The downstream client gives a server's request a deadline (mcp-go's:
	// 30 s) and posts the answer with that context: stop waiting a little
	// before it, so that the downstream still gets an error, not silence.
	wctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-answerMargin))
		defer cancel()
	}
	select {
	case raw := <-wait:
		return answerResult(raw)
	case <-wctx.Done():
		if ctx.Err() == nil {
			return nil, &mcpclient.RPCError{Code: mcp.INTERNAL_ERROR,
				Message: fmt.Sprintf("the caller did not answer %s in time", method)}
		}
		return nil, fmt.Errorf("waiting for the caller's answer to %s: %w", method, context.Cause(ctx))
	}
}

// answerMargin is how long before the downstream client's deadline a
// request stops waiting for the caller.
const answerMargin = time.Second

// Reasons a request cannot be sent to a caller.
var (
	errRequestModern = errors.New("the caller speaks MCP 2026-07-28, which has no server-to-client requests " +
		"(multi round-trip requests replace them); pallasgw does not relay those")
	errRequestNoSession = errors.New("the caller has no session id from pallasgw (it did not initialize " +
		"through it), so its answer could not be routed")
	errRequestNoSSE = errors.New("the caller's request does not accept an SSE response, so nothing can be sent " +
		"to it before the result")
)

func canRequest(rs *requestState, t *StreamTracker, method string, params json.RawMessage) error {
	c, ok := callerCapability(method)
	switch {
	case !ok:
		return fmt.Errorf("%s is not relayed", method)
	case rs == nil || !rs.legacy:
		return errRequestModern
	case rs.sessionID == "":
		return errRequestNoSession
	case !sessionDeclared(rs.sessionID, c):
		return fmt.Errorf("the caller did not declare the %s capability when it initialized", capabilityName(c))
	case c == capElicitation && urlMode(params) && !sessionDeclared(rs.sessionID, capElicitationURL):
		return errors.New("the caller did not declare URL-mode elicitation (elicitation.url) when it initialized")
	case !rs.acceptSSE || t == nil || t.w == nil:
		return errRequestNoSSE
	}
	return nil
}

// urlMode reports an elicitation/create in URL mode.
func urlMode(params json.RawMessage) bool {
	var p struct {
		Mode string `json:"mode"`
	}
	return json.Unmarshal(params, &p) == nil && p.Mode == string(mcp.ElicitationModeURL)
}

func capabilityName(c byte) string {
	switch c {
	case capElicitation:
		return "elicitation"
	case capRoots:
		return "roots"
	}
	return "sampling"
}

// CallerRequests holds what a caller's later POST must find of a running
// call: the requests waiting for the caller's answers, and the running fast
// calls (agents/wire) a notifications/cancelled may name. One lives as long
// as the gateway, which hands it to every snapshot's endpoints: the POST must find them after a
// reload has swapped the snapshot, and with it the endpoint, that the call
// runs on.
type CallerRequests struct {
	// The input-required bridge's (inputbridge.go): the requestState
	// sealer, the calls parked for a retry, the metrics.
	seal    atomic.Pointer[sealer]
	metrics atomic.Pointer[metrics.Metrics]
	parked  map[string]*inputCall // guarded by mu
	// now is the bridge's clock: a state's expiry when sealed and when
	// opened, a parked call's. time.Now; a test sets it before use, so
	// that a state sealed in a fixture opens at the fixture's time.
	now func() time.Time

	// replica names this process in the ids of its requests, so that an
	// answer another replica receives is published to it (share.go).
	replica string
	share   atomic.Pointer[answerShare]

	mu      sync.Mutex
	waiting map[string]*pendingRequest // request id → the request; guarded by mu
	running map[string]*runningCall    // "<agent>\x00<session>:<id>" → a fast call; guarded by mu
}

// runningCall is one tracked call of a session-based caller.
type runningCall struct {
	cancel context.CancelFunc // a fast call's; nil for a call mcp-go serves
	owner  *Endpoint          // the endpoint (so the snapshot) serving it
}

// maxRunning bounds the tracked calls: past it, calls are not tracked (a
// cancel then reaches only what mcp-go knows of). Entries live only while
// their call runs.
const maxRunning = 10000

// NewCallerRequests returns an empty registry.
func NewCallerRequests() *CallerRequests {
	r := make([]byte, 6)
	_, _ = rand.Read(r) // never fails (crypto/rand)
	c := &CallerRequests{waiting: map[string]*pendingRequest{}, running: map[string]*runningCall{}, parked: map[string]*inputCall{},
		replica: hex.EncodeToString(r), now: time.Now}
	c.seal.Store(newSealer(nil))
	return c
}

// Configure sets the key that seals requestState (32 bytes; nil keeps the
// current one, random at first) and the metrics of the input-required
// bridge. A new key makes the states sealed under the old one invalid.
func (c *CallerRequests) Configure(key []byte, m *metrics.Metrics) {
	if key != nil {
		c.seal.Store(newSealer(key))
	}
	if m != nil {
		c.metrics.Store(m)
	}
}

func (c *CallerRequests) sealer() *sealer { return c.seal.Load() }

// Tag is a MAC of parts under a key derived from the state key: what a
// replica that shares the key can check without shared state (a proxy's
// task ids name their owner with one).
func (c *CallerRequests) Tag(parts ...string) string { return c.sealer().tag(parts...) }

func (c *CallerRequests) open(text, agent string) (*roundState, error) {
	return c.sealer().open(text, agent, c.now())
}

// rejected counts a retry refused for its requestState or inputResponses.
func (c *CallerRequests) rejected(reason string) {
	if m := c.metrics.Load(); m != nil {
		m.RequestStateRejections.WithLabelValues(reason).Inc()
	}
}

// count counts an input-required round by outcome.
func (c *CallerRequests) count(outcome string) {
	if m := c.metrics.Load(); m != nil {
		m.InputRequired.WithLabelValues(outcome).Inc()
	}
}

// park keeps call for its retry, dropping expired calls and, past
// maxParked, the one that expires first (its retry replays).
func (c *CallerRequests) park(call *inputCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for id, p := range c.parked {
		if now.After(p.exp) {
			p.cancel()
			delete(c.parked, id)
		}
	}
	if len(c.parked) >= maxParked {
		var first *inputCall
		for _, p := range c.parked {
			if first == nil || p.exp.Before(first.exp) {
				first = p
			}
		}
		first.cancel()
		delete(c.parked, first.id)
	}
	c.parked[call.id] = call
	c.gauge()
}

// unpark takes the call parked under id (nil: none here).
func (c *CallerRequests) unpark(id string) *inputCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.parked[id]
	delete(c.parked, id)
	c.gauge()
	return call
}

// CancelParked cancels every parked call (the gateway shuts down): each
// downstream request waiting for a caller gets an error at once.
func (c *CallerRequests) CancelParked() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.parked {
		p.cancel()
		delete(c.parked, id)
	}
	c.gauge()
}

// drop takes call out of the table if it is parked there.
func (c *CallerRequests) drop(call *inputCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parked[call.id] == call {
		delete(c.parked, call.id)
		c.gauge()
	}
}

func (c *CallerRequests) gauge() {
	if m := c.metrics.Load(); m != nil {
		m.InputRequiredParked.Set(float64(len(c.parked)))
	}
}

// track records a running call under key and returns the function that
// removes it; nil when the key is taken or the table full.
func (c *CallerRequests) track(key string, call *runningCall) (untrack func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.running[key]; taken || len(c.running) >= maxRunning {
		return nil
	}
	c.running[key] = call
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[key] == call {
			delete(c.running, key)
		}
	}
}

// remove takes the call tracked under key out of the table and returns it
// (nil if none).
func (c *CallerRequests) remove(key string) *runningCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.running[key]
	delete(c.running, key)
	return call
}

// expect registers a request id for an answer from sessionID.
func (c *CallerRequests) expect(sessionID string) (string, <-chan json.RawMessage, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := requestIDPrefix + c.replica + "-" + hex.EncodeToString(b)
	p := &pendingRequest{sessionID: sessionID, answer: make(chan json.RawMessage, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) >= maxWaiting {
		return "", nil, fmt.Errorf("too many requests waiting for callers' answers (%d)", maxWaiting)
	}
	c.waiting[id] = p
	return id, p.answer, nil
}

func (c *CallerRequests) forget(id string) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
}

// take delivers a caller's answer (body, a JSON-RPC response to id) to the
// request waiting for it: 202, as for any response a client posts; 404
// when none is waiting for it from this session (answered already, the call
// ended, or another replica asked).
func (c *CallerRequests) take(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	sid := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case c.deliver(id, sid, body):
		w.WriteHeader(http.StatusAccepted)
	case c.forward(w, r, id, sid, body): // share.go: another replica's, answered there
	default:
		// A JSON-RPC error, as mcp-go answers what it refuses; the
		// tracking writer adds the request id to its message.
		wire.WriteError(w, http.StatusNotFound, id, mcp.INVALID_REQUEST,
			fmt.Sprintf("no request %q is waiting for an answer from this session", id), nil)
	}
}

// deliver hands body to the request id waiting for an answer from
// session sid, and reports whether one was.
func (c *CallerRequests) deliver(id, sid string, body []byte) bool {
	c.mu.Lock()
	p := c.waiting[id]
	if p != nil && p.sessionID == sid {
		delete(c.waiting, id)
	} else {
		p = nil
	}
	c.mu.Unlock()
	if p == nil {
		return false
	}
	p.answer <- json.RawMessage(body)
	return true
}

// answerResult returns the result of a caller's JSON-RPC response, or its
// error as an *mcpclient.RPCError.
func answerResult(raw json.RawMessage) (json.RawMessage, error) {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("the caller's answer: %w", err)
	}
	if resp.Error != nil {
		return nil, &mcpclient.RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}
