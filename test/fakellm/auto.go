package fakellm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// AutoOptions configure a fake that answers without a script, for load
// tests and benchmarks: a model that calls one tool, then answers.
type AutoOptions struct {
	// Tool is the tool the model calls when the last message of the
	// conversation is not a tool result. Empty: it answers with text at once.
	Tool string
	// Args are the tool call's arguments (nil: {}).
	Args json.RawMessage
	// Answer is the final text once the last message is a tool result
	// (default "done").
	Answer string
	// Delay pauses every answer after its response headers (a slow model);
	// the pause ends early when the client goes away.
	Delay time.Duration
}

// NewAuto starts a fake on 127.0.0.1 that answers every chat request (both
// APIs) by o, with no script: a tool call when the conversation's last
// message is not a tool result (OpenAI: role "tool"; Anthropic: a user
// message holding tool_result blocks), else the text answer. It keeps no
// record of requests (Requests and ChatRequests stay empty, so memory does
// not grow with load) and checks no key. The model endpoints answer as New's
// do. It is closed when the test or benchmark ends.
func NewAuto(t testing.TB, o AutoOptions) *Server {
	t.Helper()
	if o.Answer == "" {
		o.Answer = "done"
	}
	s := &Server{closing: make(chan struct{}), models: []string{"fake-model"}}
	var seq atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.autoChat("openai", o, &seq))
	mux.HandleFunc("POST /v1/messages", s.autoChat("anthropic", o, &seq))
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("GET /v1/models/{model}", s.getModel)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

func (s *Server) autoChat(api string, o AutoOptions, seq *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := decodeChat(api, body, false)
		if c == nil {
			writeError(w, api, http.StatusBadRequest, 0, "request body is not JSON")
			return
		}
		st := Text(o.Answer)
		if o.Tool != "" && !lastIsToolResult(c) {
			st = ToolCalls(Call{Name: o.Tool, Args: o.Args})
		}
		st = st.Delay(o.Delay)
		sw := newStream(w, r, s.closing, st, c, strconv.FormatInt(seq.Add(1), 10))
		if api == "openai" {
			sw.openAI()
		} else {
			sw.anthropic()
		}
	}
}

// lastIsToolResult reports whether the conversation ends with a tool result.
func lastIsToolResult(c *Chat) bool {
	if len(c.Messages) == 0 {
		return false
	}
	m := c.Messages[len(c.Messages)-1]
	return m.Role == "tool" || len(m.ToolResults) > 0
}
