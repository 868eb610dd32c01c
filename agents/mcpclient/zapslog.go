package mcpclient

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler feeds mcp-go's slog output into the component's zap logger.
// mcp-go logs routine events at Info ("listening to server forever") and
// retried background failures at Error, so levels are lowered one step:
// Info becomes Debug, Error becomes Warn.
//
// A session's handler also has the values of the session's outbound headers
// taken out of errors and strings (scrub.go): mcp-go logs the failures of
// its listener stream with the server's answer in them, which may echo a
// credential.
//
// A session's handler also writes a warning that repeats (mcp-go retries
// its GET stream once a second while the server is down, each failure an
// Error) once a minute at most (repeats); the repeats in between go to
// Debug.
type zapHandler struct {
	log    *zap.Logger
	prefix string                       // group prefix for attribute keys
	hs     []http.Header                // a session's outbound headers and its server's secrets
	auth   *atomic.Pointer[http.Header] // and its Authorization (callerauth.go); nil for none
	rep    *repeats                     // nil: every warning is written
}

// headers are the header sets whose values h takes out.
func (h *zapHandler) headers() []http.Header {
	if a := authHeader(h.auth); a != nil {
		return append(h.hs[:len(h.hs):len(h.hs)], a)
	}
	return h.hs
}

func (h *zapHandler) level(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.WarnLevel
	case l >= slog.LevelWarn:
		return zapcore.InfoLevel
	default:
		return zapcore.DebugLevel
	}
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(h.level(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	level, repeated := h.level(r.Level), 0
	if level >= zapcore.WarnLevel && h.rep != nil {
		level, repeated = h.rep.admit(r.Message, level)
	}
	ce := h.log.Check(level, "mcp-go: "+scrubString(r.Message, h.headers()...))
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs()+1)
	if repeated > 0 {
		fields = append(fields, zap.Int(fieldRepeated, repeated))
	}
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	v := a.Value.Resolve()
	switch x := v.Any().(type) {
	case error:
		return zap.NamedError(h.prefix+a.Key, scrub(x, h.headers()...))
	case string:
		return zap.String(h.prefix+a.Key, scrubString(x, h.headers()...))
	}
	return zap.Any(h.prefix+a.Key, v.Any())
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, h.field(a))
	}
	return &zapHandler{log: h.log.With(fields...), prefix: h.prefix, hs: h.hs, auth: h.auth, rep: h.rep}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, prefix: h.prefix + name + ".", hs: h.hs, auth: h.auth, rep: h.rep}
}

// SlogLogger returns a slog.Logger writing into log with the levels lowered
// as for the clients' transports, for mcp-go's server side (the agents'
// Streamable HTTP handlers), which would otherwise write to slog's default
// logger on stderr.
func SlogLogger(log *zap.Logger) *slog.Logger { return slog.New(&zapHandler{log: log}) }

// Repeated warnings of one session's mcp-go transport.
const (
	// repeatEvery is how often a warning that keeps repeating is written
	// at its level; the repeats in between are written at Debug.
	repeatEvery = time.Minute
	// maxRepeatKeys bounds the messages tracked: mcp-go's are constant
	// texts (the details are attributes), a few dozen in all.
	maxRepeatKeys = 64
)

// repeats remembers when each warning message of a session was last
// written at its level. mcp-go's Streamable HTTP client retries its GET
// stream once a second, for as long as the server is down, logging each
// failure ("failed to listen to server. retry in 1 second"): 200 lines in
// 4 minutes for one session. The gateway's health checks and reconnects
// deal with the outage; the log needs the first failure, and a reminder a
// minute, with the count of the repeats in between.
type repeats struct {
	mu   sync.Mutex
	now  func() time.Time // time.Now; tests set it
	seen map[string]*repeat
}

type repeat struct {
	written    time.Time // last written at its level
	suppressed int       // repeats since, written at Debug
}

func newRepeats() *repeats { return &repeats{now: time.Now, seen: map[string]*repeat{}} }

// admit returns the level to write msg at, and, when that is level, how
// many repeats were lowered to Debug since it was last written at it.
func (r *repeats) admit(msg string, level zapcore.Level) (zapcore.Level, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	e := r.seen[msg]
	if e == nil {
		if len(r.seen) >= maxRepeatKeys {
			return level, 0
		}
		r.seen[msg] = &repeat{written: now}
		return level, 0
	}
	if now.Sub(e.written) < repeatEvery {
		e.suppressed++
		return zapcore.DebugLevel, 0
	}
	n := e.suppressed
	e.written, e.suppressed = now, 0
	return level, n
}
