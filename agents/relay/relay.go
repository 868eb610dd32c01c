// Package relay owns the relay of one call's notifications to its caller:
// a downstream's progress and log messages (the proxy and toolbox kinds)
// and an agent's own progress (agents' Reporter), queued so that delivery
// never blocks the downstream transport's reader. It writes to the
// caller's response only through the request's notifier; it does not
// know the kinds.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics"
)

// Relay forwards the notifications/progress of one downstream call
// (proxy tools/call, toolbox execute_tool) to the caller as the downstream
// sent them — progress, total and message — under the caller's token. The
// MCP spec requires progress to increase with every notification; a value
// that does not is raised to the next float above the last one sent. For a
// proxy tools/call it also relays the call's log messages
// (notifications/message), in one queue with the progress, so that their
// order is kept.
//
// Delivery never blocks the downstream transport's reader: a notification
// that finds the per-request buffer full (mcp-go's, or the fast path's,
// both of 100) waits in a queue, drained as the response writer makes room,
// in order. What cannot be sent within retryBlocked, or before the caller
// goes away, is counted as dropped.
type Relay struct {
	ctx     context.Context
	notify  notifyFunc
	direct  bool              // notify is the fast path's stream, which writes all it took before the result
	token   mcp.ProgressToken // nil: no progress
	logs    bool              // relay log messages
	level   mcp.LoggingLevel  // with logs: the least severe level relayed; "" = all
	stream  Stream            // nil: none tracked
	metrics *metrics.Metrics
	down    mcpclient.Relay // Downstream's, kept with r (one allocation for both)

	mu       sync.Mutex
	ended    bool // the call returned: nothing more may be written by exclusive
	last     float64
	started  bool
	queue    []notice
	draining bool
	sent     int
	mark     int           // events the response had written before the send that found the buffer full
	idle     chan struct{} // closed when the queue empties; replaced when it fills
}

// notice is one queued notification.
type notice struct {
	method string
	params map[string]any
}

// Stream is the response the events of a request are written to
// (endpoint.StreamTracker): how many it has written, and a wait for more.
type Stream interface {
	Events() int
	WaitEvents(ctx context.Context, n int, timeout time.Duration)
}

// retryBlocked is how long a notification waits for room in the
// per-request notification buffer (mcp-go's, or the fast path's) before it
// is counted as dropped: the one such wait, for a downstream's
// notifications (proxy, toolbox) and an agent's own progress (agents'
// Reporter, NewProgressRelay).
const retryBlocked = 2 * time.Second

// NewCallRelay returns the relay of a call's progress to the response
// stream for a call whose downstream may also send server-to-client
// requests to the caller (toolbox execute_tool): it returns a relay even
// without a token, since the requests are written in order with the
// progress (Exclusive); nil only when the call has nowhere to send
// notifications (call's Notifier). End it when the call returns.
func NewCallRelay(ctx context.Context, call *wire.Call, stream Stream, token mcp.ProgressToken, m *metrics.Metrics) *Relay {
	return buildRelay(ctx, call, stream, token, false, "", m)
}

// NewProgressRelay returns the relay of the progress an agent reports of
// its own call (agents' Reporter), through call's Notifier (a "_meta" in
// params is kept); nil when the call has nowhere to send notifications.
// Its notifications are queued and delivered as a downstream's are (Send).
func NewProgressRelay(ctx context.Context, call *wire.Call, stream Stream, m *metrics.Metrics) *Relay {
	notify, direct := call.Notifier(ctx, true)
	if notify == nil {
		return nil
	}
	return &Relay{ctx: ctx, notify: notify, direct: direct, stream: stream, metrics: m, idle: emptyQueue}
}

// Send queues one notification with params as they are, in order with
// the rest; it never blocks on the response writer.
func (r *Relay) Send(method string, params map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enqueueLocked(notice{method, params})
}

// End marks the call returned: no server-to-client request is written to
// the caller after it (Exclusive).
func (r *Relay) End() { r.end() }

// New returns the relay of a call's progress to the response stream,
// and of its log messages when logs is set (those at level or more severe
// when level is set); nil (a relay that asks for nothing) when there is
// neither a token nor logs, or nowhere to send notifications (call's
// Notifier: the fast path's call, or mcp-go's session for a nil call).
func New(ctx context.Context, call *wire.Call, stream Stream, token mcp.ProgressToken, logs bool, level mcp.LoggingLevel, m *metrics.Metrics) *Relay {
	if token == nil && !logs {
		return nil
	}
	return buildRelay(ctx, call, stream, token, logs, level, m)
}

// buildRelay is New without its check that there is anything to relay.
func buildRelay(ctx context.Context, call *wire.Call, stream Stream, token mcp.ProgressToken, logs bool, level mcp.LoggingLevel, m *metrics.Metrics) *Relay {
	notify, direct := call.Notifier(ctx, false)
	if notify == nil {
		return nil
	}
	return &Relay{ctx: ctx, notify: notify, direct: direct, token: token, logs: logs, level: level,
		stream: stream, metrics: m, idle: emptyQueue}
}

// emptyQueue is a new relay's idle: closed, shared. A relay closes only
// the channel it made when its queue filled (enqueueLocked).
var emptyQueue = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// notifyFunc sends one notification to the caller of a request. It returns
// server.ErrNotificationChannelBlocked when the request's buffer is full
// (try again once the writer has written an event), another error when the
// notification cannot be sent at all.
type notifyFunc func(method string, params map[string]any) error

// ProgressFunc is what the downstream call reports progress to; nil when
// the caller asked for none, so the downstream is not asked either.
func (r *Relay) ProgressFunc() mcpclient.ProgressFunc {
	if r == nil || r.token == nil {
		return nil
	}
	return r.add
}

// NotifyFunc is how r sends a notification to the caller at once (not
// queued), or nil when r is nil.
func (r *Relay) NotifyFunc() func(method string, params map[string]any) error {
	if r == nil {
		return nil
	}
	return r.notify
}

// Downstream is the relay a downstream call hands its log messages,
// notifications and (to request) its server-to-client requests to: r's
// LogFunc and NotifyFunc, level the least severe log level the caller
// wants. A nil r makes one with request alone.
func (r *Relay) Downstream(level mcp.LoggingLevel, request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)) *mcpclient.Relay {
	if r == nil {
		return &mcpclient.Relay{LogLevel: level, Request: request}
	}
	r.down = mcpclient.Relay{Log: r.LogFunc(), LogLevel: level, Notify: r.NotifyFunc(), Request: request}
	return &r.down
}

// LogFunc is what the downstream call hands its log messages to; nil when
// the caller takes none.
func (r *Relay) LogFunc() func(map[string]any) {
	if r == nil || !r.logs {
		return nil
	}
	return r.log
}

func (r *Relay) log(params map[string]any) {
	if r.level != "" {
		if level, _ := params["level"].(string); !mcp.LoggingLevel(level).ShouldSendTo(r.level) {
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enqueueLocked(notice{string(mcp.MethodNotificationMessage), params})
}

func (r *Relay) add(progress float64, total *float64, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started && !(progress > r.last) {
		progress = math.Nextafter(r.last, math.Inf(1))
	}
	r.started, r.last = true, progress
	params := map[string]any{"progressToken": r.token, "progress": progress}
	if total != nil {
		params["total"] = *total
	}
	if message != "" {
		params["message"] = message
	}
	r.enqueueLocked(notice{string(mcp.MethodNotificationProgress), params})
}

func (r *Relay) enqueueLocked(n notice) {
	if len(r.queue) == 0 {
		r.idle = make(chan struct{})
	}
	r.queue = append(r.queue, n)
	if !r.draining && !r.pumpLocked() {
		r.draining = true
		go r.drain()
	}
}

// pumpLocked sends the queue in order. It reports false, leaving the rest
// queued, when mcp-go's buffer is full.
func (r *Relay) pumpLocked() bool {
	if len(r.queue) == 0 {
		return true
	}
	for len(r.queue) > 0 {
		mark := r.written()
		n := r.queue[0]
		err := r.notify(n.method, n.params)
		switch {
		case err == nil:
			r.sent++
			r.count(n, "sent")
		case errors.Is(err, server.ErrNotificationChannelBlocked) && r.ctx.Err() == nil:
			r.mark = mark
			return false
		default:
			r.count(n, "dropped")
		}
		r.queue = r.queue[1:]
	}
	close(r.idle)
	return true
}

// written is the number of events written to the response so far.
func (r *Relay) written() int {
	if r.stream == nil {
		return 0
	}
	return r.stream.Events()
}

// drain retries the queue each time the response writer has written an
// event since the send that found the buffer full (a write frees room).
// It gives up when retryBlocked passes without any notification getting
// through, or the caller is gone.
func (r *Relay) drain() {
	deadline := time.Now().Add(retryBlocked)
	for {
		r.mu.Lock()
		mark := r.mark
		r.mu.Unlock()
		if r.stream != nil {
			r.stream.WaitEvents(r.ctx, mark+1, time.Until(deadline))
		} else {
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-t.C:
			case <-r.ctx.Done():
			}
			t.Stop()
		}
		r.mu.Lock()
		before := r.sent
		if r.pumpLocked() {
			r.draining = false
			r.mu.Unlock()
			return
		}
		if r.sent > before {
			deadline = time.Now().Add(retryBlocked)
		}
		if r.ctx.Err() != nil || time.Now().After(deadline) {
			r.dropLocked()
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// dropLocked gives up on whatever is still queued and counts it.
func (r *Relay) dropLocked() {
	if len(r.queue) > 0 {
		for _, n := range r.queue {
			r.count(n, "dropped")
		}
		r.queue = nil
		close(r.idle)
	}
	r.draining = false
}

// count records a progress notification's outcome (pallasgw_progress_notifications_total counts
// progress only; a log message that could not be sent is not counted).
func (r *Relay) count(n notice, outcome string) {
	if n.method == string(mcp.MethodNotificationProgress) {
		r.metrics.Progress.WithLabelValues(outcome).Inc()
	}
}

// errCallEnded: the call a server-to-client request was for has returned.
var errCallEnded = wire.ErrCallEnded

// end marks the call returned (see Exclusive). A nil relay has nothing to
// end.
func (r *Relay) end() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}

// Exclusive runs write, which puts an event of the agent's own on the
// caller's response (injected: wire.Response.Inject), once every
// notification relayed so far has been written, and holds further ones
// back while it runs: mcp-go's writer is then idle and not touching the
// response's headers. A notification mcp-go never writes (the caller went
// away) holds it up for retryBlocked at most.
//
// A downstream's request can be handled after its call has returned (mcp-go's
// client handles each in a goroutine of its own), when the response is being
// finished or is gone: once end has run, or ctx has ended, Exclusive refuses
// (errCallEnded). Since it holds r.mu while write runs, and end takes r.mu,
// every write it lets through is over before the call returns.
func (r *Relay) Exclusive(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(retryBlocked)
	for {
		r.mu.Lock()
		if r.ended || ctx.Err() != nil {
			r.mu.Unlock()
			return errCallEnded
		}
		idle, sent := r.idle, r.sent
		if (len(r.queue) == 0 && r.written() >= sent) || time.Now().After(deadline) {
			defer r.mu.Unlock()
			if err := write(); err != nil {
				return err
			}
			r.sent++
			return nil
		}
		r.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if r.stream != nil {
			r.stream.WaitEvents(ctx, sent, time.Until(deadline))
		}
	}
}

// Flush waits until every notification queued so far has been sent and
// written to the response, so that none is lost when the handler returns
// (mcp-go v1.2.1 can drop one still in flight when the result is
// written). The fast path's stream needs only the first half: it writes
// what it took before it writes the result.
func (r *Relay) Flush(timeout time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle: // nothing queued: no timer
	default:
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		select {
		case <-idle:
		case <-r.ctx.Done():
		case <-deadline.C:
		}
	}
	r.mu.Lock()
	r.dropLocked()
	sent := r.sent
	r.mu.Unlock()
	if r.stream != nil && !r.direct {
		r.stream.WaitEvents(r.ctx, sent, timeout)
	}
}
