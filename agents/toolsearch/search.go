package toolsearch

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
)

// Defaults and bounds of a search.
const (
	DefaultLimit           = 10
	MaxLimit               = 50
	DefaultMaxSchemaTokens = 4000
	// MaxQueryBytes bounds the query text a caller may send.
	MaxQueryBytes = 1024
	// synonymWeight scales the terms a query gains from synonyms.
	synonymWeight = 0.5
)

// Query is one search.
type Query struct {
	Text            string
	Limit           int      // results at most; 0: DefaultLimit
	Servers         []string // only these servers' tools; nil: every server
	MaxSchemaTokens int      // budget for the results (JSON length / 4); 0: DefaultMaxSchemaTokens
}

// Hit is one ranked tool, as the caller gets it.
type Hit struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Result is what a search answers. Tools are in rank order, the best
// first; the list ends at Limit, or before the first tool that would take
// TokensUsed past MaxSchemaTokens (Truncated). Matched counts every tool
// that matched at all.
type Result struct {
	Query           string `json:"query"`
	Tools           []Hit  `json:"tools"`
	Matched         int    `json:"total_matches"`
	Returned        int    `json:"returned"`
	TokensUsed      int    `json:"tokens_used"`
	MaxSchemaTokens int    `json:"max_schema_tokens"`
	Truncated       bool   `json:"truncated"`
	// Unavailable names the servers whose tools could not be listed, with
	// why (filled by the caller of Search).
	Unavailable []string `json:"unavailable,omitempty"`
}

// Search ranks entries, the tools the caller may use, by relevance to
// q.Text and returns the best within q's limit and budget. Entries that no
// term of the query matches are not returned.
func (x *Index) Search(ctx context.Context, entries []Entry, q Query) Result {
	q = withDefaults(q)
	if q.Servers != nil {
		entries = slices.DeleteFunc(slices.Clone(entries), func(e Entry) bool { return !slices.Contains(q.Servers, e.Server) })
	}
	res := Result{Query: q.Text, Tools: []Hit{}, MaxSchemaTokens: q.MaxSchemaTokens}
	if len(entries) == 0 {
		return res
	}
	s, ids := x.current(entries)
	ranked := s.rank(ids, q.Text)
	if x.sem != nil && strings.TrimSpace(q.Text) != "" {
		ranked = x.sem.fuse(ctx, s, ids, q.Text, ranked)
	}
	res.Matched = len(ranked)
	for _, r := range ranked {
		if len(res.Tools) == q.Limit {
			break
		}
		d := &s.docs[r.doc]
		if res.TokensUsed+d.cost > q.MaxSchemaTokens {
			res.Truncated = true // in rank order: the first tool past the budget ends the list
			break
		}
		res.TokensUsed += d.cost
		res.Tools = append(res.Tools, d.hit())
	}
	res.Returned = len(res.Tools)
	return res
}

func withDefaults(q Query) Query {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	q.Limit = min(q.Limit, MaxLimit)
	if q.MaxSchemaTokens <= 0 {
		q.MaxSchemaTokens = DefaultMaxSchemaTokens
	}
	return q
}

// Tokens estimates the tokens of v as JSON: its length / 4, rounded up (as
// get_server_tools counts).
func Tokens(v any) int {
	b, _ := json.Marshal(v)
	return (len(b) + 3) / 4
}

// scored is one document's score.
type scored struct {
	doc   int32
	score float64
}

// rank scores the documents ids (the caller's) for text and returns those
// with a positive score, best first (ties by name).
func (s *snapshot) rank(ids []int32, text string) []scored {
	allowed := make([]bool, len(s.docs))
	size := make([]float64, len(s.servers)) // the caller's tools of each server
	for _, id := range ids {
		allowed[id] = true
		size[s.docs[id].srv]++
	}
	scores := make([]float64, len(s.docs))
	context := make([]float64, len(s.servers))
	count := make([]float64, len(s.servers))
	n := float64(len(s.docs))
	for term, w := range s.queryTerms(text) {
		ps := s.postings[term]
		if len(ps) == 0 {
			continue
		}
		idf := math.Pow(math.Log(1+(n-float64(len(ps))+0.5)/(float64(len(ps))+0.5)), idfPower)
		clear(count)
		for _, p := range ps {
			if allowed[p.doc] {
				tf := float64(p.tf)
				scores[p.doc] += w * idf * tf * (bm25K1 + 1) / (tf + bm25K1)
				count[s.docs[p.doc].srv]++
			}
		}
		for srv, c := range count {
			if c > 0 {
				context[srv] += w * idf * c / size[srv]
			}
		}
	}
	for _, id := range ids {
		if scores[id] > 0 {
			scores[id] += serverWeight * context[s.docs[id].srv]
		}
	}
	exact := strings.TrimSpace(text)
	var out []scored
	for _, id := range ids {
		sc := scores[id]
		if d := &s.docs[id]; exact != "" && (d.name == exact || d.tool == exact) {
			sc += exactBonus // the caller named the tool
		}
		if sc > 0 {
			out = append(out, scored{id, sc})
		}
	}
	s.sortScored(out)
	return out
}

// exactBonus is added to the score of the tool a query names exactly.
const exactBonus = 1e6

// sortScored sorts out best first, ties by name.
func (s *snapshot) sortScored(out []scored) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return s.docs[out[i].doc].name < s.docs[out[j].doc].name
	})
}
