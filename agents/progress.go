package agents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/endpoint"
	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/metrics"
)

// Reporter sends the notifications/progress of one tool call with one
// strictly increasing counter. A nil *Reporter, or one without a
// token, sends nothing. Sub-runs share their parent's Reporter through
// Prefixed, so the counter stays one per call.
type Reporter struct {
	shared *progressState
	prefix string
}

type progressState struct {
	mu      sync.Mutex
	ctx     context.Context
	token   mcp.ProgressToken
	counter float64
	sent    int
	stream  *endpoint.StreamTracker
	metrics *metrics.Metrics
	notify  func(method string, params map[string]any) error // nil: nowhere to send
}

func newReporter(ctx context.Context, token mcp.ProgressToken, m *metrics.Metrics) *Reporter {
	if token == nil {
		return nil
	}
	return &Reporter{shared: &progressState{ctx: ctx, token: token, stream: endpoint.TrackerFrom(ctx), metrics: m, notify: notifier(ctx)}}
}

// Prefixed returns a reporter whose messages start with prefix.
func (r *Reporter) Prefixed(prefix string) *Reporter {
	if r == nil {
		return nil
	}
	return &Reporter{shared: r.shared, prefix: r.prefix + prefix}
}

// Send emits one progress notification.
func (r *Reporter) Send(message string) { r.send(message, false) }

// Done emits the call's last notification, which carries total.
func (r *Reporter) Done(message string) { r.send(message, true) }

// retryBlocked is how long a notification waits for room in the
// per-request notification buffer (mcp-go's, or the fast path's) before it
// is counted as dropped.
const retryBlocked = 2 * time.Second

func (r *Reporter) send(message string, last bool) {
	if r == nil {
		return
	}
	s := r.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter++
	params := map[string]any{"progressToken": s.token, "progress": s.counter, "message": r.prefix + message}
	if last {
		params["total"] = s.counter
	}
	if s.notify == nil {
		return
	}
	deadline := time.Now().Add(retryBlocked)
	for {
		err := s.notify("notifications/progress", params)
		if err == nil {
			s.sent++
			s.metrics.Progress.WithLabelValues("sent").Inc()
			return
		}
		// The buffer holds 100; wait for the writer rather than drop.
		if !errors.Is(err, server.ErrNotificationChannelBlocked) || time.Now().After(deadline) || s.ctx.Err() != nil {
			s.metrics.Progress.WithLabelValues("dropped").Inc()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Exclusive runs write, a request of the endpoint's own injected into the
// call's response (endpoint.Request), once every notification sent so far
// has been written, holding further ones back meanwhile, so that mcp-go's
// writer is idle and not touching the response's headers (as
// proxy.Relay.Exclusive). Without a reporter (no token) nothing else is
// written during the call. It refuses once ctx has ended.
func (r *Reporter) Exclusive(ctx context.Context, write func() error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if r == nil {
		return write()
	}
	s := r.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream != nil {
		s.stream.WaitEvents(ctx, s.sent, retryBlocked)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return write()
}

// notifier is where the notifications of the call of ctx go: the fast
// path's stream (agents/wire), or mcp-go's session; nil when there is
// neither.
func notifier(ctx context.Context) func(method string, params map[string]any) error {
	if fs := wire.StreamFrom(ctx); fs != nil {
		return fs.Notify
	}
	if srv := server.ServerFromContext(ctx); srv != nil {
		return func(method string, params map[string]any) error {
			return srv.SendNotificationToClient(ctx, method, params)
		}
	}
	return nil
}

// flush waits until every notification sent so far has been written to the
// response, so none is lost when the handler returns (mcp-go can drop a
// notification that is still in flight when the result is written).
func (r *Reporter) flush(timeout time.Duration) {
	if r == nil || r.shared.stream == nil {
		return
	}
	s := r.shared
	s.mu.Lock()
	want := s.sent
	s.mu.Unlock()
	s.stream.WaitEvents(s.ctx, want, timeout)
}
