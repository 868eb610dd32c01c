package agents

import (
	"bytes"
	"net/http"
	"strings"
)

// trackingWriter counts SSE events (mcp-go writes each as one
// "event: message\n..." write) and sets the streaming headers.
type trackingWriter struct {
	http.ResponseWriter
	t           *StreamTracker
	wroteHeader bool
}

var sseEvent = []byte("event: ")

func (w *trackingWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.Header().Set("X-Accel-Buffering", "no")
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if bytes.HasPrefix(p, sseEvent) {
		w.t.wrote(1)
	}
	return n, err
}

// Flush makes the wrapper an http.Flusher, as mcp-go requires for SSE.
func (w *trackingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
