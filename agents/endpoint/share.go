package endpoint

// Answers across replicas (the config's sessions.store): a caller's answer
// to a server-to-client request can reach a replica other than the one
// whose call waits for it (round-robin without affinity). The request id
// names the replica that sent it ("pgw-r-<replica>-<random>"); a replica
// that has nobody waiting for an answer publishes it on that replica's
// channel, where the waiting call takes it as if it had come itself (the
// same check: the session id the request went to). The caller gets 202
// once a replica received it, 404 when none listens under that name (it
// has stopped), and 503 with Retry-After when the store cannot be reached.
// Without a store an answer is taken only by the replica that asked.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// Publisher is what forwarding answers needs of the session store.
type Publisher interface {
	Publish(ctx context.Context, channel string, msg []byte) (int64, error)
	Subscribe(ctx context.Context, channel string, fn func([]byte)) error
}

// answerShare publishes answers to the replica that asked, once started
// (the store logs and counts its own failures).
type answerShare struct {
	replica string // this process's name in its request ids (pendingAsks)
	store   atomic.Pointer[sharedStore]
}

// sharedStore is the store answers travel through.
type sharedStore struct{ Publisher }

// forwarded is one answer on a replica's channel.
type forwarded struct {
	ID      string          `json:"id"`
	Session string          `json:"session"`
	Body    json.RawMessage `json:"body"`
}

// answersChannel is the channel of replica's answers.
func answersChannel(replica string) string { return "answers:" + replica }

// start makes answers travel through store until ctx ends: this replica
// listens on its channel and hands each answer to deliver. When it cannot
// subscribe it takes only the answers that reach it. An answer nobody here
// waits for any more (its call ended) is dropped, as one posted to this
// replica is refused.
func (s *answerShare) start(ctx context.Context, store Publisher, deliver func(id, sid string, body []byte) bool) {
	s.store.Store(&sharedStore{store})
	_ = store.Subscribe(ctx, answersChannel(s.replica), func(msg []byte) {
		var f forwarded
		if json.Unmarshal(msg, &f) == nil {
			deliver(f.ID, f.Session, f.Body)
		}
	})
}

// forward publishes the answer id to the replica that asked, when that is
// another one and a store is shared, and reports whether it answered w.
func (s *answerShare) forward(w http.ResponseWriter, r *http.Request, id, sid string, body []byte) bool {
	sh := s.store.Load()
	rest, ok := strings.CutPrefix(id, requestIDPrefix)
	replica, _, ok2 := strings.Cut(rest, "-")
	if sh == nil || !ok || !ok2 || replica == s.replica || sid == "" {
		return false
	}
	msg, err := json.Marshal(forwarded{ID: id, Session: sid, Body: body})
	if err != nil {
		return false
	}
	n, err := sh.Publish(r.Context(), answersChannel(replica), msg)
	if err != nil {
		StoreUnavailable(w, []byte(strconv.Quote(id)))
		return true
	}
	if n == 0 {
		return false // the replica that asked is gone
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// StoreUnavailable answers a request that needed the session store while
// it cannot be reached: HTTP 503, Retry-After, a JSON-RPC error to id.
func StoreUnavailable(w http.ResponseWriter, id json.RawMessage) {
	w.Header().Set("Retry-After", strconv.Itoa(int(sessions.StoreRetryAfter.Seconds())))
	wire.WriteError(w, http.StatusServiceUnavailable, id, mcp.INTERNAL_ERROR,
		fmt.Sprintf("%v; retry in %s", sessions.ErrStoreUnavailable, sessions.StoreRetryAfter), nil)
}
