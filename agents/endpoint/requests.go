package endpoint

// What outlives a snapshot of what a caller's later POST must find of a
// running call, one part per job: the requests waiting for callers'
// answers (asks.go), the running calls a notifications/cancelled may name
// (running.go), the answers that travel between replicas (share.go), and
// the input-required bridge's parked calls and state codec
// (agents/bridge).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/bridge"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics"
)

// CallerRequests holds, for the gateway's lifetime, what a caller's later
// POST must find of a running call; the gateway hands it to every
// snapshot's endpoints: the POST must find it after a reload has swapped
// the snapshot, and with it the endpoint, that the call runs on.
type CallerRequests struct {
	seal    *bridge.Sealer // the state key's: session ids, task ids, requestState
	bridge  *bridge.Shared // the input-required bridge's parked calls and metrics
	metrics atomic.Pointer[metrics.Metrics]
	asks    pendingAsks  // requests waiting for a caller's answer
	running runningCalls // calls a notifications/cancelled may name
	share   answerShare  // answers to another replica's requests
}

// NewCallerRequests returns an empty registry.
func NewCallerRequests() *CallerRequests {
	r := make([]byte, 6)
	_, _ = rand.Read(r) // never fails (crypto/rand)
	replica := hex.EncodeToString(r)
	seal := bridge.NewSealer()
	c := &CallerRequests{seal: seal, bridge: bridge.NewShared(seal)}
	c.asks.init(replica)
	c.running.init()
	c.share.replica = replica
	return c
}

// Configure sets the key that seals requestState (32 bytes; nil keeps the
// current one, random at first) and the metrics of the input-required
// bridge. A new key makes the states sealed under the old one invalid.
func (c *CallerRequests) Configure(key []byte, m *metrics.Metrics) {
	if key != nil {
		c.seal.SetKey(key)
	}
	if m != nil {
		c.metrics.Store(m)
		c.bridge.SetMetrics(m)
	}
}

// Tag is a MAC of parts under a key derived from the state key: what a
// replica that shares the key can check without shared state (a proxy's
// task ids name their owner with one).
func (c *CallerRequests) Tag(parts ...string) string { return c.seal.Tag(parts...) }

// CancelParked cancels every call the input-required bridge parked (the
// gateway shuts down): each downstream request waiting for a caller gets
// an error at once.
func (c *CallerRequests) CancelParked() { c.bridge.CancelParked() }

// Share makes answers travel through store until ctx ends (share.go).
func (c *CallerRequests) Share(ctx context.Context, store Publisher) {
	c.share.start(ctx, store, c.asks.deliver)
}

// take delivers a caller's answer (body, a JSON-RPC response to id) to the
// request waiting for it: 202, as for any response a client posts; 404
// when none is waiting for it from this session (answered already, the call
// ended, or another replica asked).
func (c *CallerRequests) take(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	sid := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case c.asks.deliver(id, sid, body):
		w.WriteHeader(http.StatusAccepted)
	case c.share.forward(w, r, id, sid, body): // share.go: another replica's, answered there
	default:
		// A JSON-RPC error, as mcp-go answers what it refuses; the
		// tracking writer adds the request id to its message.
		wire.WriteError(w, http.StatusNotFound, id, mcp.INVALID_REQUEST,
			fmt.Sprintf("no request %q is waiting for an answer from this session", id), nil)
	}
}
