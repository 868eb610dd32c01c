package fakellm

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strings"
	"unicode"
)

// EmbedDims is the length of the fake's embedding vectors.
const EmbedDims = 64

// Embeddings is one decoded POST /v1/embeddings request.
type Embeddings struct {
	Model  string
	Inputs []string
}

// embeddings answers POST /v1/embeddings (OpenAI's shape): one vector per
// input, from SetEmbedding's function (default: BagOfWords), or the
// status FailEmbeddings set.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fail, embed := s.embedFail, s.embed
	s.mu.Unlock()
	if fail != 0 {
		writeError(w, "openai", fail, 0, "embeddings unavailable")
		return
	}
	e, ok := decodeEmbeddings(r)
	if !ok || len(e.Inputs) == 0 {
		writeError(w, "openai", http.StatusBadRequest, 0, "input must be a string or an array of strings")
		return
	}
	if embed == nil {
		embed = BagOfWords
	}
	data := make([]map[string]any, len(e.Inputs))
	for i, in := range e.Inputs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": embed(in)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "model": e.Model, "data": data,
		"usage": map[string]any{"prompt_tokens": len(e.Inputs), "total_tokens": len(e.Inputs)}})
}

func decodeEmbeddings(r *http.Request) (Embeddings, bool) {
	var body struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if json.NewDecoder(r.Body).Decode(&body) != nil {
		return Embeddings{}, false
	}
	e := Embeddings{Model: body.Model}
	var one string
	if json.Unmarshal(body.Input, &one) == nil {
		e.Inputs = []string{one}
		return e, true
	}
	return e, json.Unmarshal(body.Input, &e.Inputs) == nil
}

// EmbeddingRequests returns the embeddings requests received so far, in
// order (their inputs as sent).
func (s *Server) EmbeddingRequests() []Embeddings {
	var out []Embeddings
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v1/embeddings" {
			var body struct {
				Model string          `json:"model"`
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal(r.Body, &body)
			e := Embeddings{Model: body.Model}
			if json.Unmarshal(body.Input, &e.Inputs) != nil {
				var one string
				_ = json.Unmarshal(body.Input, &one)
				e.Inputs = []string{one}
			}
			out = append(out, e)
		}
	}
	return out
}

// SetEmbedding makes the fake embed each input with f (nil: BagOfWords).
func (s *Server) SetEmbedding(f func(string) []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embed = f
}

// FailEmbeddings makes every embeddings request answer status (0: answer
// again).
func (s *Server) FailEmbeddings(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFail = status
}

// BagOfWords is the fake's default embedding: each lower-cased word of
// text adds 1 to a dimension chosen by its hash. Texts sharing words point
// the same way; it knows no synonyms.
func BagOfWords(text string) []float32 {
	v := make([]float32, EmbedDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%EmbedDims]++
	}
	return v
}
