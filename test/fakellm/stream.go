package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// stream writes one SSE answer for a step.
type stream struct {
	w       http.ResponseWriter
	r       *http.Request
	closing <-chan struct{}
	step    Step
	chat    *Chat
	id      string // response id suffix
	pieces  int64  // content pieces sent, the default output token count
}

func newStream(w http.ResponseWriter, r *http.Request, closing <-chan struct{}, st Step, c *Chat, id string) *stream {
	return &stream{w: w, r: r, closing: closing, step: st, chat: c, id: id}
}

// start sends the SSE response headers.
func (s *stream) start() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.flush()
	if s.step.delay > 0 {
		t := time.NewTimer(s.step.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.r.Context().Done():
		case <-s.closing:
		}
	}
}

func (s *stream) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// raw writes text as is and flushes.
func (s *stream) raw(text string) {
	_, _ = fmt.Fprint(s.w, text)
	s.flush()
}

// event writes one SSE event (name may be empty) with v as JSON data.
func (s *stream) event(name string, v any) {
	b, _ := json.Marshal(v)
	if s.step.has(QuirkPing) {
		s.raw(": ping\n\n")
	}
	if name != "" {
		s.raw("event: " + name + "\n")
	}
	s.raw("data: " + string(b) + "\n\n")
}

// hang blocks until the client goes away or the server closes.
func (s *stream) hang() {
	s.step.hang.markStarted()
	select {
	case <-s.r.Context().Done():
		s.step.hang.markGone()
	case <-s.closing:
	}
}

// usage returns the input and output tokens to report.
func (s *stream) usage() (int64, int64) {
	if u := s.step.usage; u != nil {
		return u[0], u[1]
	}
	return s.chat.words(), max(s.pieces, 1)
}

// callID is the id of call i of this answer.
func (s *stream) callID(i int, c Call, prefix string) string {
	if c.ID != "" {
		return c.ID
	}
	return prefix + s.id + "_" + strconv.Itoa(i)
}

func args(c Call) string {
	if len(c.Args) == 0 {
		return "{}"
	}
	return string(c.Args)
}

// split cuts s into pieces of at most n runes (at least one piece).
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, runes := 0, 0
		for i < len(s) && runes < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			runes++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// thirds cuts s into up to three byte ranges (arguments are streamed in
// fragments that need not be valid JSON on their own).
func thirds(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with an HTTP error in the API's format.
func writeError(w http.ResponseWriter, api string, status int, retryAfter time.Duration, msg string) {
	switch {
	case retryAfter <= 0:
	case retryAfter%time.Second == 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	default:
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	typ := errorType(status)
	if api == "anthropic" {
		writeJSON(w, status, map[string]any{"type": "error",
			"error": map[string]any{"type": typ, "message": msg}})
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": nil}})
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}
