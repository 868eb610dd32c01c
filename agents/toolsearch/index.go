package toolsearch

import (
	"encoding/json"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// Entry is one tool a caller may use, as its agent exposes it.
type Entry struct {
	Server string   // the downstream server
	Name   string   // the name the caller uses (<server>__<tool> where prefixed)
	Tool   mcp.Tool // the server's definition; its schemas are shared, never modified
}

// Field weights (BM25F): a term in a tool's name says more about what the
// tool does than one in a parameter's description.
const (
	weightName       = 3.0
	weightTitle      = 2.0
	weightServer     = 1.5
	weightDesc       = 1.0
	weightParamName  = 1.0
	weightParamDesc  = 0.5
	bm25K1           = 1.2
	bm25B            = 0.75
	maxIndexedTools  = 20000 // documents kept past the current lists (tools gone or seen by other callers)
	maxSchemaForText = 64 << 10
)

// Index is the search index of one agent. It is safe for concurrent use;
// searches read an immutable snapshot, and a search that meets a tool the
// snapshot lacks (or holds in an older definition) builds the next one.
type Index struct {
	mu  sync.Mutex // serialises rebuilds
	cur atomic.Pointer[snapshot]
}

// New returns an empty index.
func New() *Index {
	x := &Index{}
	x.cur.Store(&snapshot{byKey: map[docKey]int32{}, postings: map[string][]posting{}})
	return x
}

// snapshot is one immutable state of the index.
type snapshot struct {
	docs     []doc
	byKey    map[docKey]int32 // → index in docs
	postings map[string][]posting
	avgLen   float64
}

type posting struct {
	doc int32
	tf  float32 // weighted term frequency
}

// doc is one indexed tool, with the fields it was built from (to tell a
// changed definition) and what a result shows.
type doc struct {
	server, name string // as the caller knows it
	tool         string // the server's own name for it
	title, desc  string
	schema       json.RawMessage
	props        uintptr // the typed schema's properties map it was built from (0: raw, or none)
	length       float32 // weighted number of terms
	cost         int     // tokens of its Hit (Tokens)
}

func (d *doc) hit() Hit {
	return Hit{Server: d.server, Name: d.name, Description: d.desc, InputSchema: d.schema}
}

// docKey names a document: a tool by server and exposed name.
type docKey struct{ server, name string }

// same reports whether e is the definition d was built from. Strings and
// schemas shared with the downstream's cached list compare by pointer first,
// so the check costs little when nothing changed.
func (d *doc) same(e *Entry) bool {
	if d.tool != e.Tool.Name || d.desc != e.Tool.Description || d.title != titleOf(e.Tool) {
		return false
	}
	if len(e.Tool.RawInputSchema) > 0 { // as the downstream clients hand tools over
		return string(d.schema) == string(e.Tool.RawInputSchema)
	}
	if p := propsOf(e.Tool); p != 0 && p == d.props {
		return true // the same typed schema: not encoded again on every search
	}
	return string(d.schema) == string(InputSchema(e.Tool))
}

// propsOf identifies a typed input schema by its properties map.
func propsOf(t mcp.Tool) uintptr {
	if len(t.RawInputSchema) > 0 || t.InputSchema.Properties == nil {
		return 0
	}
	return reflect.ValueOf(t.InputSchema.Properties).Pointer()
}

// current returns a snapshot holding every entry in its present
// definition, building a new one if needed, and each entry's document.
func (x *Index) current(entries []Entry) (*snapshot, []int32) {
	if s, ids, ok := x.cur.Load().lookup(entries); ok {
		return s, ids
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ids, ok := x.cur.Load().lookup(entries); ok { // built meanwhile
		return s, ids
	}
	s := x.cur.Load().with(entries)
	x.cur.Store(s)
	ids, _ := s.ids(entries)
	return s, ids
}

func (s *snapshot) lookup(entries []Entry) (*snapshot, []int32, bool) {
	ids, ok := s.ids(entries)
	return s, ids, ok
}

// ids maps entries to their documents; ok is false if one is missing or
// stale.
func (s *snapshot) ids(entries []Entry) ([]int32, bool) {
	ids := make([]int32, len(entries))
	for i := range entries {
		e := &entries[i]
		id, ok := s.byKey[docKey{e.Server, e.Name}]
		if !ok || !s.docs[id].same(e) {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// with builds the snapshot that holds entries as they are now, and keeps
// the other documents of s (tools other callers see, or that went away)
// while the total stays under maxIndexedTools.
func (s *snapshot) with(entries []Entry) *snapshot {
	fresh := make(map[docKey]bool, len(entries))
	var keep []doc
	for i := range entries {
		fresh[docKey{entries[i].Server, entries[i].Name}] = true
	}
	for _, d := range s.docs {
		if !fresh[docKey{d.server, d.name}] && len(keep)+len(entries) < maxIndexedTools {
			keep = append(keep, d)
		}
	}
	b := newBuilder(len(keep) + len(entries))
	for i := range keep {
		b.addDoc(keep[i])
	}
	seen := make(map[docKey]bool, len(entries))
	for i := range entries {
		e := &entries[i]
		if k := (docKey{e.Server, e.Name}); !seen[k] {
			seen[k] = true
			b.add(e)
		}
	}
	return b.snapshot()
}

// builder accumulates the documents of a new snapshot, then its postings.
type builder struct {
	s     *snapshot
	total float64
	terms []map[string]float32 // per document: weighted term frequencies
	buf   []string
}

func newBuilder(n int) *builder {
	return &builder{s: &snapshot{docs: make([]doc, 0, n), byKey: make(map[docKey]int32, n), postings: map[string][]posting{}},
		terms: make([]map[string]float32, 0, n)}
}

func (b *builder) add(e *Entry) {
	b.addDoc(doc{server: e.Server, name: e.Name, tool: e.Tool.Name, title: titleOf(e.Tool), desc: e.Tool.Description, schema: InputSchema(e.Tool), props: propsOf(e.Tool)})
}

// addDoc indexes d. The name field is the server's own name for the tool,
// so that a tool ranks the same whether or not its agent prefixes it.
func (b *builder) addDoc(d doc) {
	terms := map[string]float32{}
	field := func(text string, weight float32) {
		b.buf = tokens(b.buf[:0], text)
		for _, t := range b.buf {
			terms[t] += weight
		}
	}
	field(d.tool, weightName)
	field(d.title, weightTitle)
	field(d.server, weightServer)
	field(d.desc, weightDesc)
	for _, p := range paramsOf(d.schema) {
		field(p.name, weightParamName)
		field(p.desc, weightParamDesc)
	}
	if d.cost == 0 {
		d.cost = Tokens(d.hit())
	}
	b.s.byKey[docKey{d.server, d.name}] = int32(len(b.s.docs))
	b.s.docs = append(b.s.docs, d)
	b.terms = append(b.terms, terms)
}

// snapshot writes the postings. A compound term that is two terms of the
// corpus joined ("worklog", "filesystem", "datasource") also counts, at half
// its weight, as each of them.
func (b *builder) snapshot() *snapshot {
	vocab := map[string]bool{}
	for _, terms := range b.terms {
		for t := range terms {
			vocab[t] = true
		}
	}
	parts := map[string][2]string{}
	for t := range vocab {
		if a, c, ok := compound(t, vocab); ok {
			parts[t] = [2]string{a, c}
		}
	}
	for id, terms := range b.terms {
		for t, tf := range terms {
			if p, ok := parts[t]; ok {
				terms[p[0]] += tf / 2
				terms[p[1]] += tf / 2
			}
		}
		var length float32
		for t, tf := range terms {
			b.s.postings[t] = append(b.s.postings[t], posting{doc: int32(id), tf: tf})
			length += tf
		}
		b.s.docs[id].length = length
		b.total += float64(length)
	}
	if n := len(b.s.docs); n > 0 {
		b.s.avgLen = b.total / float64(n)
	}
	for _, ps := range b.s.postings {
		sort.Slice(ps, func(i, j int) bool { return ps[i].doc < ps[j].doc })
	}
	return b.s
}

// compound splits t into two terms of vocab of at least 3 letters each,
// preferring the longest first part.
func compound(t string, vocab map[string]bool) (string, string, bool) {
	if len(t) < 6 || !isASCIILower(t) {
		return "", "", false
	}
	for i := len(t) - 3; i >= 3; i-- {
		if a, c := t[:i], t[i:]; vocab[a] && vocab[stem(c)] {
			return a, stem(c), true
		}
	}
	return "", "", false
}

// param is one top-level parameter of an input schema.
type param struct{ name, desc string }

// paramsOf reads the top-level properties of a schema (names and
// descriptions); a schema it cannot read has none.
func paramsOf(schema json.RawMessage) []param {
	if len(schema) > maxSchemaForText {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make([]param, 0, len(s.Properties))
	for name, p := range s.Properties {
		out = append(out, param{name: name, desc: p.Title + " " + p.Description})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// InputSchema is a tool's input schema as JSON, as search_tools,
// get_server_tools and the llm kind give it: the schema as the server sent
// it when it is known, else the typed one, else an empty object schema.
func InputSchema(t mcp.Tool) json.RawMessage {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil || string(b) == "null" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

// titleOf is the tool's display title: its title, else its annotations'.
func titleOf(t mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	return t.Annotations.Title
}
