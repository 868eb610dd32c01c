package mcpclient

import (
	"context"
	"log/slog"
	"net/http"

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
type zapHandler struct {
	log    *zap.Logger
	prefix string        // group prefix for attribute keys
	hs     []http.Header // a session's outbound headers and its server's secrets
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
	ce := h.log.Check(h.level(r.Level), "mcp-go: "+scrubString(r.Message, h.hs...))
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
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
		return zap.NamedError(h.prefix+a.Key, scrub(x, h.hs...))
	case string:
		return zap.String(h.prefix+a.Key, scrubString(x, h.hs...))
	}
	return zap.Any(h.prefix+a.Key, v.Any())
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, h.field(a))
	}
	return &zapHandler{log: h.log.With(fields...), prefix: h.prefix, hs: h.hs}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, prefix: h.prefix + name + ".", hs: h.hs}
}

// SlogLogger returns a slog.Logger writing into log with the levels lowered
// as for the clients' transports, for mcp-go's server side (the agents'
// Streamable HTTP handlers), which would otherwise write to slog's default
// logger on stderr.
func SlogLogger(log *zap.Logger) *slog.Logger { return slog.New(&zapHandler{log: log}) }
