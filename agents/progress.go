package agents

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/relay"
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
	token   mcp.ProgressToken
	counter float64
	relay   *relay.Relay // delivers, as a downstream's progress is (nil: nowhere to send)
	detail  bool         // the caller asked for tool details (ToolDetailMeta)
}

// ToolDetailMeta is the _meta key a caller sets to true on its
// send_message call to have the progress of each downstream tool call
// carry, under the same key in the notification's _meta, the tool's
// server, name and arguments ("started") and the start of its result
// ("completed", "failed"). `pallasgw chat` sets it to show tool calls. The
// progress messages themselves are the same with or without it.
const ToolDetailMeta = "io.pallasgw/toolDetail"

func newReporter(ctx context.Context, wc *wire.Call, meta *mcp.Meta, m *metrics.Metrics) *Reporter {
	if meta == nil || meta.ProgressToken == nil {
		return nil
	}
	detail, _ := meta.AdditionalFields[ToolDetailMeta].(bool)
	return &Reporter{shared: &progressState{token: meta.ProgressToken, detail: detail,
		relay: relay.NewProgressRelay(ctx, wc, wc.Stream(), m)}}
}

// Prefixed returns a reporter whose messages start with prefix.
func (r *Reporter) Prefixed(prefix string) *Reporter {
	if r == nil {
		return nil
	}
	return &Reporter{shared: r.shared, prefix: r.prefix + prefix}
}

// Send emits one progress notification.
func (r *Reporter) Send(message string) { r.send(message, false, nil) }

// Done emits the call's last notification, which carries total.
func (r *Reporter) Done(message string) { r.send(message, true, nil) }

// SendTool emits one progress notification of a downstream tool call;
// detail goes in its _meta when the caller asked for it (ToolDetailMeta).
func (r *Reporter) SendTool(message string, detail func() map[string]any) {
	if r == nil || !r.shared.detail {
		r.Send(message)
		return
	}
	r.send(message, false, detail())
}

func (r *Reporter) send(message string, last bool, detail map[string]any) {
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
	if detail != nil {
		params["_meta"] = map[string]any{ToolDetailMeta: detail}
	}
	if s.relay != nil {
		s.relay.Send("notifications/progress", params) // waits for room in the buffer as relay.Relay does
	}
}

// Exclusive runs write, a request of the endpoint's own injected into the
// call's response (endpoint.Request), once every notification sent so far
// has been written, holding further ones back meanwhile, so that mcp-go's
// writer is idle and not touching the response's headers
// (relay.Relay.Exclusive). Without a reporter (no token) nothing else is
// written during the call. It refuses once ctx has ended.
func (r *Reporter) Exclusive(ctx context.Context, write func() error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if r == nil || r.shared.relay == nil {
		return write()
	}
	return r.shared.relay.Exclusive(ctx, write)
}

// flush waits until every notification sent so far has been written to the
// response, so none is lost when the handler returns (mcp-go can drop a
// notification that is still in flight when the result is written).
func (r *Reporter) flush(timeout time.Duration) {
	if r == nil {
		return
	}
	r.shared.relay.Flush(timeout)
}
