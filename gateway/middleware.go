package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/wire"
)

// The middleware of every route, outermost first. The chain is declared in
// one place, chain, so a request's path reads top to bottom.
func (g *Gateway) chain(handler string, h http.Handler) http.Handler {
	return g.publicChain(handler, g.originGuard(h))
}

// browserChain is chain with CORS after the Origin guard (cors.go), for
// the routes a page on another origin may call: the agents' MCP endpoints
// and the registry.
func (g *Gateway) browserChain(handler string, h http.Handler) http.Handler {
	return g.publicChain(handler, g.originGuard(browserCORS(h, func() map[string]bool { return g.current.Load().forwarded })))
}

// publicChain is chain without the Origin guard, for the public metadata
// any page may read (Access-Control-Allow-Origin: *): server cards, the AI
// catalog, the OAuth protected resource metadata.
func (g *Gateway) publicChain(handler string, h http.Handler) http.Handler {
	return g.requestID(g.instrument(handler, g.recoverer(h)))
}

// originGuard is the DNS-rebinding guard of every route but the public
// metadata: a request with an Origin that originAllowed refuses
// ("null" included) gets 403, whatever it asks for: an agent, the
// registry, /metrics, the admin and profiling endpoints.
func (g *Gateway) originGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(g.current.Load().origins, o, r.Host) {
			writeError(w, http.StatusForbidden, agents.RequestID(r.Context()),
				"origin "+quoteClipped(o)+" is not in allowed_origins (nor a loopback page calling a loopback host)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestID takes X-Request-Id from the request when it is sane, or makes
// one, and puts it on the response and in the context.
func (g *Gateway) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(agents.WithRequestID(r.Context(), id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status code for metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument records pallasgw_http_requests_total and the duration
// histogram under a fixed handler label.
func (g *Gateway) instrument(handler string, next http.Handler) http.Handler {
	dur := g.metrics.HTTPDuration.WithLabelValues(handler)
	requests := g.metrics.HTTPRequestsFor(handler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			requests.Code(code).Inc()
			dur.Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// recoverer turns a handler panic into a logged 500 with the request id.
func (g *Gateway) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil || v == http.ErrAbortHandler {
				if v != nil {
					panic(v)
				}
				return
			}
			id := agents.RequestID(r.Context())
			g.log.Error("panic in handler", zap.String("request_id", id), zap.String("path", r.URL.Path), zap.Any("panic", v), zap.Stack("stack"))
			writeError(w, http.StatusInternalServerError, id, "internal error")
		}()
		next.ServeHTTP(w, r)
	})
}

// writeError answers with a small JSON error naming the request id.
func writeError(w http.ResponseWriter, status int, requestID, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": msg, "status": status, "request_id": requestID})
}

// maxEcho bounds how much of a request value (an agent name, a path, an
// Origin) an error message repeats: a 100 kB name in the path must not come
// back as a 100 kB answer.
const maxEcho = 64

// quoteClipped quotes s for an error message, cut at maxEcho bytes.
func quoteClipped(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:maxEcho], "")) + fmt.Sprintf("… (%d bytes)", len(s))
}

// writeJSONRPCError answers an MCP POST with a JSON-RPC error (id null when
// unknown) so that MCP clients show the message.
func writeJSONRPCError(w http.ResponseWriter, status int, id any, code int, requestID, msg string) {
	writeJSONRPCErrorData(w, status, id, code, requestID, msg, nil)
}

// writeJSONRPCErrorData is writeJSONRPCError with the error's data member
// (omitted when nil).
func writeJSONRPCErrorData(w http.ResponseWriter, status int, id any, code int, requestID, msg string, data any) {
	wire.WriteError(w, status, id, code, fmt.Sprintf("%s (request id %s)", msg, requestID), data)
}
