package mcpclient

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const listenFailed = "mcp-go: failed to listen to server. retry in 1 second"

// A Streamable HTTP server that goes away leaves mcp-go's GET stream
// retrying once a second; its failure is one warning, the retries after it
// are Debug lines, however many there are.
func TestDeadServerListenRetriesLogOnce(t *testing.T) {
	log, logs := observed(zap.NewAtomicLevelAt(zap.DebugLevel))
	d := newDownstream(t, true) // stateful: mcp-go keeps a GET stream open
	m := newManager(t, Options{Logger: log}, d.spec("down"))
	if _, err := m.CallTool(testCtx(t), "down", "echo", map[string]any{"text": "x"}, nil, nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the GET stream", func() bool { return d.count("GET", "") > 0 })
	d.ts.CloseClientConnections()
	d.ts.Close()

	const retries = 4
	eventually(t, "the listener's retries", func() bool { return logs.FilterMessage(listenFailed).Len() >= retries })
	warned := 0
	for _, e := range logs.FilterMessage(listenFailed).All() {
		if e.Level >= zapcore.WarnLevel {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("%d of %d listener failures logged at warn or above, want 1", warned, logs.FilterMessage(listenFailed).Len())
	}
}

// A warning that keeps repeating is written at its level once per
// repeatEvery, with the count of the repeats lowered to Debug in between.
func TestRepeatsOncePerInterval(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := newRepeats()
	r.now = func() time.Time { return now }
	type step struct {
		advance time.Duration
		msg     string
		level   zapcore.Level
		n       int
	}
	for i, s := range []step{
		{0, "a", zapcore.WarnLevel, 0},
		{time.Second, "a", zapcore.DebugLevel, 0},
		{time.Second, "b", zapcore.WarnLevel, 0}, // another message is not held back
		{time.Second, "a", zapcore.DebugLevel, 0},
		{repeatEvery, "a", zapcore.WarnLevel, 2},
		{time.Second, "a", zapcore.DebugLevel, 0},
	} {
		now = now.Add(s.advance)
		if level, n := r.admit(s.msg, zapcore.WarnLevel); level != s.level || n != s.n {
			t.Errorf("step %d (%s): level %v, repeated %d; want %v, %d", i, s.msg, level, n, s.level, s.n)
		}
	}
}
