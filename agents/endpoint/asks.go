package endpoint

// The requests the endpoint sent callers and that wait for their answers
// (callerrequest.go), by request id.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// maxWaiting bounds the requests waiting for an answer, over all callers.
// Each belongs to a running call, so the bound is only reached under a flood
// of them; the next one is refused.
const maxWaiting = 1024

// pendingRequest is one request waiting for its caller's answer.
type pendingRequest struct {
	sessionID string               // the answer must come with it
	answer    chan json.RawMessage // the caller's JSON-RPC response; buffered, one
}

// pendingAsks is the table of requests waiting for an answer.
type pendingAsks struct {
	// replica names this process in the ids of its requests, so that an
	// answer another replica receives is published to it (share.go).
	replica string

	mu      sync.Mutex
	waiting map[string]*pendingRequest // request id → the request; guarded by mu
}

func (p *pendingAsks) init(replica string) {
	p.replica, p.waiting = replica, map[string]*pendingRequest{}
}

// expect registers a request id for an answer from sessionID.
func (p *pendingAsks) expect(sessionID string) (string, <-chan json.RawMessage, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := requestIDPrefix + p.replica + "-" + hex.EncodeToString(b)
	r := &pendingRequest{sessionID: sessionID, answer: make(chan json.RawMessage, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) >= maxWaiting {
		return "", nil, fmt.Errorf("too many requests waiting for callers' answers (%d)", maxWaiting)
	}
	p.waiting[id] = r
	return id, r.answer, nil
}

func (p *pendingAsks) forget(id string) {
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
}

// deliver hands body to the request id waiting for an answer from
// session sid, and reports whether one was.
func (p *pendingAsks) deliver(id, sid string, body []byte) bool {
	p.mu.Lock()
	r := p.waiting[id]
	if r != nil && r.sessionID == sid {
		delete(p.waiting, id)
	} else {
		r = nil
	}
	p.mu.Unlock()
	if r == nil {
		return false
	}
	r.answer <- json.RawMessage(body)
	return true
}
