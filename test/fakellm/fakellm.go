// Package fakellm is a scripted fake of two LLM HTTP APIs for tests: the
// OpenAI Chat Completions streaming API (POST /v1/chat/completions, GET
// /v1/models; and POST /v1/embeddings, embeddings.go) and the Anthropic
// Messages streaming API (POST /v1/messages, GET /v1/models/{model}). It
// speaks their SSE protocols faithfully, records every request, and can
// reproduce the quirks of real servers. It owns no production code and
// must never be imported outside tests.
//
// Usage:
//
//	srv := fakellm.New(t)                     // 127.0.0.1, closed by t.Cleanup
//	srv.Script(
//		fakellm.ToolCalls(fakellm.Call{Name: "search", Args: json.RawMessage(`{"q":"go"}`)}),
//		fakellm.Status(429, 50*time.Millisecond), // retried by the client
//		fakellm.Text("done").Quirks(fakellm.QuirkNoIndex, fakellm.QuirkPing),
//	)
//	p, _ := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: srv.OpenAIBaseURL(), APIKey: "k"})
//	// or llm.NewAnthropic(... BaseURL: srv.AnthropicBaseURL() ...)
//	... run the code under test ...
//	reqs := srv.ChatRequests()                // decoded: roles, images, tools offered
//
// Each chat request (either API) consumes one scripted Step in order. A
// CallFound step calls the tool that the conversation's last tool result
// names (a search's answer), so a test proves that a model can call a tool
// it only learnt of from a search. With
// the script empty the fake answers "echo: " + the last user message text,
// so unscripted tests still get an answer. A Hang step blocks until the
// client disconnects and reports it on Step.Disconnected.
//
// Models: GET /v1/models lists SetModels' names (default "fake-model");
// GET /v1/models/{model} answers 404 for names not in that list. Chat
// requests accept any model. RequireKey makes every endpoint answer 401
// (in the API's error format, echoing the key presented) unless the request
// carries "Authorization: Bearer <key>" or "x-api-key: <key>".
package fakellm

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv     *httptest.Server
	closing chan struct{} // closed before srv.Close so Hang steps return

	mu       sync.Mutex
	script   []Step
	requests []Request
	models   []string
	key      string
	seq      int
	delay    time.Duration // for unscripted echo answers
	rules    []rule        // When
	// embeddings (embeddings.go)
	embed     func(string) []float32
	embedFail int
}

// rule is a standing answer for requests whose last user message holds
// substr.
type rule struct {
	substr string
	step   Step
}

// New starts a fake on 127.0.0.1; it is closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{closing: make(chan struct{}), models: []string{"fake-model"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat("openai"))
	mux.HandleFunc("POST /v1/messages", s.chat("anthropic"))
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("GET /v1/models/{model}", s.getModel)
	mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.srv = httptest.NewServer(s.record(mux))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// URL is the server root, e.g. http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.srv.URL }

// CloseClientConnections closes the clients' connections to the fake, idle
// keep-alive ones included (leak checks count without them).
func (s *Server) CloseClientConnections() { s.srv.CloseClientConnections() }

// OpenAIBaseURL is the base URL an OpenAI client expects (URL + "/v1").
func (s *Server) OpenAIBaseURL() string { return s.srv.URL + "/v1" }

// AnthropicBaseURL is the base URL an Anthropic client expects (URL).
func (s *Server) AnthropicBaseURL() string { return s.srv.URL }

// Script queues steps; each chat request consumes the first one left.
func (s *Server) Script(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, steps...)
}

// SetEchoDelay makes unscripted echo answers pause for d (a slow model).
func (s *Server) SetEchoDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Pending is the number of scripted steps not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// SetModels replaces the model list served by the model endpoints.
func (s *Server) SetModels(models []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), models...)
}

// RequireKey makes requests without this key get 401 ("" turns it off).
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ChatRequests returns the chat requests received so far (both APIs).
func (s *Server) ChatRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Chat != nil {
			out = append(out, r)
		}
	}
	return out
}

// record stores each request (with its body), then checks the key.
func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
			rec.Chat = decodeChat("openai", body, true)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
			rec.Chat = decodeChat("anthropic", body, true)
		}
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		key := s.key
		s.mu.Unlock()
		if key != "" && !hasKey(r.Header, key) {
			presented := r.Header.Get("X-Api-Key")
			if presented == "" {
				presented = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			}
			writeError(w, apiOf(r.URL.Path), http.StatusUnauthorized, 0,
				"Incorrect API key provided: "+presented)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hasKey(h http.Header, key string) bool {
	return h.Get("Authorization") == "Bearer "+key || h.Get("X-Api-Key") == key
}

// apiOf guesses which API's error format a path wants.
func apiOf(path string) string {
	if path == "/v1/messages" || strings.HasPrefix(path, "/v1/models/") {
		return "anthropic"
	}
	return "openai"
}

// When answers every chat request whose last user message contains
// substr with st, before the script is consulted, for as long as the fake
// runs: a fault that every such call meets, whatever else runs alongside.
func (s *Server) When(substr string, st Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, rule{substr, st})
}

// next is the step for c: a rule's, else the next scripted one (popped),
// else nil; and the request's sequence number.
func (s *Server) next(c *Chat) (*Step, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if len(s.rules) > 0 {
		text := c.LastUserText()
		for _, r := range s.rules {
			if strings.Contains(text, r.substr) {
				st := r.step
				return &st, s.seq
			}
		}
	}
	if len(s.script) == 0 {
		return nil, s.seq
	}
	st := s.script[0]
	s.script = s.script[1:]
	return &st, s.seq
}

func (s *Server) chat(api string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := decodeChat(api, body, false)
		if c == nil {
			writeError(w, api, http.StatusBadRequest, 0, "request body is not JSON")
			return
		}
		st, seq := s.next(c)
		if st == nil {
			s.mu.Lock()
			echo := Text("echo: " + c.LastUserText()).Delay(s.delay)
			s.mu.Unlock()
			st = &echo
		}
		if st.kind == kindFoundCall {
			resolved := st.found(c)
			st = &resolved
		}
		if st.kind == kindStatus {
			msg := st.message
			if msg == "" {
				msg = fmt.Sprintf("fake status %d", st.status)
			}
			writeError(w, api, st.status, st.retryAfter, msg)
			return
		}
		sw := newStream(w, r, s.closing, *st, c, fmt.Sprintf("%d", seq))
		if api == "openai" {
			sw.openAI()
		} else {
			sw.anthropic()
		}
	}
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	models := append([]string(nil), s.models...)
	s.mu.Unlock()
	data := make([]map[string]any, 0, len(models))
	for _, m := range models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "fakellm"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	s.mu.Lock()
	found := false
	for _, m := range s.models {
		found = found || m == name
	}
	s.mu.Unlock()
	if !found {
		writeError(w, "anthropic", http.StatusNotFound, 0, "model: "+name)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": "model", "id": name,
		"display_name": name, "created_at": "2025-01-01T00:00:00Z"})
}
