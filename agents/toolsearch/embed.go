package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/pins"
)

// Embedder turns texts into vectors with one request to an embeddings API
// (an OpenAI-compatible /v1/embeddings): one vector per input, in order.
// It carries the provider's own credentials, never a caller's: the vectors
// of an agent's tools are shared by all its callers.
type Embedder interface {
	Embed(ctx context.Context, inputs []string) ([][]float32, error)
}

// Semantic ranking (tool_search.embeddings): tools are embedded once per
// definition, the query once per search, and the ranking by cosine
// similarity is fused with the lexical one.
const (
	// rrfK is reciprocal rank fusion's constant: a tool's fused score is
	// the sum over both rankings of 1/(rrfK + its rank); 60 is the value of
	// the method's paper (Cormack, Clarke and Büttcher, 2009), which keeps
	// one ranking's first places from drowning the other's.
	rrfK = 60
	// semanticDepth is how many of the best tools by embedding enter the
	// fusion: as many as a search may return.
	semanticDepth = MaxLimit
	// maxBatch is the most inputs one request carries (OpenAI's limit is
	// 2,048): more changed tools than that take several requests.
	maxBatch = 2048
	// maxEmbedText bounds the text a tool is embedded from (bytes; embedding
	// models read a few thousand tokens at most).
	maxEmbedText = 4000
	// toolsTimeout and queryTimeout bound the wait for the provider: a
	// search waits at most queryTimeout for its query's vector (plus, when
	// tools changed, toolsTimeout for theirs), then answers lexically.
	toolsTimeout = 60 * time.Second
	queryTimeout = 10 * time.Second
)

// semantic is an Index's embedding side.
type semantic struct {
	embed Embedder
	v     *Vectors
}

// Vectors holds the vectors of tools in one embedding space (one model of
// one provider), by definition hash (the pins hash): a tool whose
// definition is unchanged is never embedded again, whichever index, caller
// or config generation meets it. Safe for concurrent use.
type Vectors struct {
	fill chan struct{} // held while tools are embedded: one request per changed set
	mu   sync.Mutex    // guards vecs
	vecs map[string][]float32
}

// NewVectors returns an empty space.
func NewVectors() *Vectors {
	return &Vectors{fill: make(chan struct{}, 1), vecs: map[string][]float32{}}
}

// VectorSpaces are the Vectors of a process by space (a provider's
// endpoint and model), kept across reloads. Safe for concurrent use.
type VectorSpaces struct {
	mu sync.Mutex
	m  map[string]*Vectors
}

// For returns the Vectors of space key, made on first use.
func (s *VectorSpaces) For(key string) *Vectors {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*Vectors{}
	}
	v := s.m[key]
	if v == nil {
		v = NewVectors()
		s.m[key] = v
	}
	return v
}

// UseEmbeddings makes x fuse an embedding ranking with its lexical one
// (call before the first Search); tools' vectors are kept in v (nil: x's
// own). When e fails, a search answers with the lexical ranking alone; e
// counts and reports its own failures.
func (x *Index) UseEmbeddings(e Embedder, v *Vectors) {
	if v == nil {
		v = NewVectors()
	}
	x.sem = &semantic{embed: e, v: v}
}

// fuse returns lexical (the ranking of s's documents ids for text) fused
// with the ranking by embedding, or lexical unchanged when the embeddings
// cannot be had.
func (m *semantic) fuse(ctx context.Context, s *snapshot, ids []int32, text string, lexical []scored) []scored {
	q, err := m.vectors(ctx, s, ids, text)
	if err != nil {
		return lexical
	}
	byVec := make([]scored, 0, len(ids))
	m.v.mu.Lock()
	for _, id := range ids {
		if v := m.v.vecs[s.docs[id].hash]; v != nil {
			byVec = append(byVec, scored{id, dot(q, v)})
		}
	}
	m.v.mu.Unlock()
	sort.Slice(byVec, func(i, j int) bool {
		if byVec[i].score != byVec[j].score {
			return byVec[i].score > byVec[j].score
		}
		return byVec[i].doc < byVec[j].doc
	})
	fused := make(map[int32]float64, len(lexical)+semanticDepth)
	for i, r := range lexical {
		fused[r.doc] += 1 / float64(rrfK+i+1)
		if r.score >= exactBonus {
			fused[r.doc] += 1 // the caller named the tool: it stays first
		}
	}
	for i, r := range byVec[:min(len(byVec), semanticDepth)] {
		fused[r.doc] += 1 / float64(rrfK+i+1)
	}
	out := make([]scored, 0, len(fused))
	for id, sc := range fused {
		out = append(out, scored{id, sc})
	}
	s.sortScored(out)
	return out
}

// vectors makes sure every document of ids has its vector and returns the
// query's: the tools not embedded yet go in one request (per maxBatch)
// together with the query, so a search makes one request when nothing
// changed, and one more per maxBatch changed tools.
func (m *semantic) vectors(ctx context.Context, s *snapshot, ids []int32, text string) ([]float32, error) {
	if len(m.missing(s, ids)) > 0 {
		q, err := m.embedTools(ctx, s, ids, text)
		if q != nil || err != nil {
			return q, err
		}
	}
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	return m.request(qctx, s, nil, text)
}

// embedTools embeds the documents of ids that have no vector, with the
// query in the last request, and returns the query's vector; nil and no
// error if another search embedded them meanwhile.
func (m *semantic) embedTools(ctx context.Context, s *snapshot, ids []int32, text string) ([]float32, error) {
	select { // one search embeds a changed set; the others wait for it
	case m.v.fill <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.v.fill }()
	missing := m.missing(s, ids)
	if len(missing) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, toolsTimeout+queryTimeout)
	defer cancel()
	for len(missing) > maxBatch {
		if _, err := m.request(ctx, s, missing[:maxBatch], ""); err != nil {
			return nil, err
		}
		missing = missing[maxBatch:]
	}
	return m.request(ctx, s, missing, text)
}

// missing lists the documents of ids whose definitions have no vector,
// one per definition.
func (m *semantic) missing(s *snapshot, ids []int32) []int32 {
	m.v.mu.Lock()
	defer m.v.mu.Unlock()
	var out []int32
	seen := map[string]bool{}
	for _, id := range ids {
		if h := s.docs[id].hash; m.v.vecs[h] == nil && !seen[h] {
			seen[h] = true
			out = append(out, id)
		}
	}
	return out
}

// request embeds the documents docs and, when text is not empty, the
// query after them; it keeps the documents' vectors and returns the
// query's.
func (m *semantic) request(ctx context.Context, s *snapshot, docs []int32, text string) ([]float32, error) {
	inputs := make([]string, 0, len(docs)+1)
	for _, id := range docs {
		inputs = append(inputs, s.docs[id].embedText())
	}
	if text != "" {
		inputs = append(inputs, text)
	}
	out, err := m.embed.Embed(ctx, inputs)
	if err == nil && len(out) != len(inputs) {
		err = fmt.Errorf("embeddings: %d vectors for %d inputs", len(out), len(inputs))
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i] = unit(out[i]); out[i] == nil || len(out[i]) != len(out[0]) {
			return nil, errors.New("embeddings: empty vectors, or vectors of different lengths")
		}
	}
	m.v.mu.Lock()
	defer m.v.mu.Unlock()
	if len(m.v.vecs)+len(docs) > 2*maxIndexedTools { // definitions long gone: start over
		clear(m.v.vecs)
	}
	for i, id := range docs {
		m.v.vecs[s.docs[id].hash] = out[i]
	}
	if text == "" {
		return nil, nil
	}
	return out[len(out)-1], nil
}

// embedText is what a tool is embedded from: its name as words, title,
// description and parameters.
func (d *doc) embedText() string {
	var b strings.Builder
	b.WriteString(strings.Join(tokensRaw(d.tool), " "))
	if d.title != "" {
		b.WriteString(": " + d.title)
	}
	if d.desc != "" {
		b.WriteString(". " + d.desc)
	}
	for _, p := range paramsOf(d.schema) {
		b.WriteString("\n" + p.name)
		if desc := strings.TrimSpace(p.desc); desc != "" {
			b.WriteString(": " + desc)
		}
	}
	t := b.String()
	if len(t) > maxEmbedText {
		t = strings.ToValidUTF8(t[:maxEmbedText], "")
	}
	return t
}

// tokensRaw splits a name into its words as written ("listObjectsV2":
// list Objects V2), for a model to read.
func tokensRaw(name string) []string {
	return strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
}

// definitionHash is the pins hash of a tool's definition (as a pins file
// holds it), or "" when it cannot be had; then the tool is embedded from
// its text alone, keyed by that.
func definitionHash(t mcp.Tool) string {
	raw, err := json.Marshal(t)
	if err == nil {
		if d, err := pins.Definition(raw); err == nil {
			return d.Hash
		}
	}
	return "text:" + t.Name + "\x00" + t.Description
}

// unit scales v to length 1 (so that a dot product is the cosine), or
// returns nil for an empty or zero vector.
func unit(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return nil
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
