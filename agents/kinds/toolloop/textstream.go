package toolloop

import (
	"strings"
	"sync"
	"time"
)

// textInterval is the least time between two text progress messages of
// one model turn (at most one per 100 ms).
const textInterval = 100 * time.Millisecond

// textStream turns an llm agent's streamed text deltas (stream_text: true)
// into progress messages "{agent} text: <the text since the last one>",
// coalesced to at most one per textInterval; whatever is left goes out when
// the model turn ends (flush), before the step messages that follow. A nil
// *textStream (no progress token, or stream_text off) does nothing.
type textStream struct {
	r      *Reporter
	prefix string

	mu    sync.Mutex
	buf   strings.Builder
	last  time.Time
	timer *time.Timer // pending send of buf; nil when none
}

func newTextStream(r *Reporter, agent string, on bool) *textStream {
	if r == nil || !on {
		return nil
	}
	return &textStream{r: r, prefix: agent + " text: "}
}

// onText is the model turn's llm.Request.OnText, or nil.
func (t *textStream) onText() func(string) {
	if t == nil {
		return nil
	}
	return t.add
}

func (t *textStream) add(delta string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.WriteString(delta)
	wait := textInterval - time.Since(t.last)
	if wait <= 0 && t.timer == nil {
		t.sendLocked()
		return
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(wait, t.tick)
	}
}

func (t *textStream) tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer == nil {
		return // flushed meanwhile
	}
	t.timer = nil
	t.sendLocked()
}

// flush sends what is buffered and stops the pending send; called when a
// model turn ends, so no timer outlives the call.
func (t *textStream) flush() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.sendLocked()
}

func (t *textStream) sendLocked() {
	if t.buf.Len() == 0 {
		return
	}
	t.r.Send(t.prefix + t.buf.String())
	t.buf.Reset()
	t.last = time.Now()
}
