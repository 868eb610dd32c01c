package toolsearch

import (
	"encoding/json"
	"reflect"
	"slices"
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

// The fields of a tool that are indexed, each with its weight and length
// normalisation (BM25F: a term's frequency in each field, weighted and
// divided by the field's length against its average, summed before
// saturation). A term in a tool's name says more about what the tool does
// than one in a parameter's description. Every field of a tool definition
// is short, and a longer one more often says more about what the tool does
// than pads it, so lengths count little (b 0.3, where prose takes 0.75); a
// server's name, the same for all its tools, not at all.
const (
	fieldName = iota
	fieldTitle
	fieldServer
	fieldDesc
	fieldParamName
	fieldParamDesc
	numFields
)

var (
	fieldWeight = [numFields]float64{fieldName: 2, fieldTitle: 1.5, fieldServer: 1, fieldDesc: 1, fieldParamName: 0.75, fieldParamDesc: 0.5}
	fieldB      = [numFields]float64{fieldName: 0.3, fieldTitle: 0.3, fieldServer: 0, fieldDesc: 0.3, fieldParamName: 0.3, fieldParamDesc: 0.3}
)

// What discriminates. A query's words are told apart by how rare they are
// in the agent's catalog (idf), not by how often one tool says them:
//   - bm25K1 is low, so a term's weight saturates soon: a word that a tool
//     repeats in its name, title, description and parameters counts at most
//     1.9 times one mention (a common word in a tool's name about 1.3).
//   - idfPower raises BM25's idf to 1.5. A word that one tool of 350 uses
//     has idf 5.5, one that a tenth of them use 2.3: BM25 alone makes the
//     rare word worth 2.4 common ones, less than two common ones in a name;
//     raised, it is worth 3.7, or about three common words in tools' names.
//     (Classic tf-idf weighs a term by idf², once on each side; 1.5 keeps
//     a word a request uses in passing from taking over: "report" in "email
//     the report to bob" is as rare as a deciding word.)
//   - serverWeight adds to each matching tool the share of its server's
//     tools that match each term (weighted by idf): a request that speaks
//     of repositories leans to the server whose tools are about
//     repositories, so two servers' create_issue are told apart.
const (
	bm25K1       = 0.9
	idfPower     = 1.5
	serverWeight = 0.5
)

const (
	maxIndexedTools  = 20000 // documents kept past the current lists (tools gone or seen by other callers)
	maxSchemaForText = 64 << 10
)

// Index is the search index of one agent. It is safe for concurrent use;
// searches read an immutable snapshot, and a search that meets a tool the
// snapshot lacks (or holds in an older definition) builds the next one.
type Index struct {
	mu  sync.Mutex // serialises rebuilds
	cur atomic.Pointer[snapshot]
	sem *semantic // embeddings (embed.go); nil: lexical ranking only
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
	servers  []string             // the servers of docs (doc.srv)
	vocab    []string             // the terms of postings, sorted
	parts    map[string][2]string // compound terms and their two parts
}

type posting struct {
	doc int32
	tf  float32 // the term's frequency in the document, weighted and normalised by field (BM25F)
}

// doc is one indexed tool, with the fields it was built from (to tell a
// changed definition) and what a result shows.
type doc struct {
	server, name string // as the caller knows it
	tool         string // the server's own name for it
	title, desc  string
	schema       json.RawMessage
	props        uintptr // the typed schema's properties map it was built from (0: raw, or none)
	srv          int32   // index of server in snapshot.servers
	hash         string  // definition hash (pins), kept when embeddings are on
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
	s := x.cur.Load().with(entries, x.sem != nil)
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
func (s *snapshot) with(entries []Entry, hashes bool) *snapshot {
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
			b.add(e, hashes)
		}
	}
	return b.snapshot()
}

// builder accumulates the documents of a new snapshot, then its postings.
type builder struct {
	s     *snapshot
	terms []map[string]*[numFields]float32 // per document: term frequencies by field
	lens  [][numFields]float32             // per document: terms by field
	buf   []string
}

func newBuilder(n int) *builder {
	return &builder{s: &snapshot{docs: make([]doc, 0, n), byKey: make(map[docKey]int32, n), postings: map[string][]posting{}},
		terms: make([]map[string]*[numFields]float32, 0, n), lens: make([][numFields]float32, 0, n)}
}

// add indexes e, with its definition hash when hashes is set.
func (b *builder) add(e *Entry, hashes bool) {
	d := doc{server: e.Server, name: e.Name, tool: e.Tool.Name, title: titleOf(e.Tool), desc: e.Tool.Description, schema: InputSchema(e.Tool), props: propsOf(e.Tool)}
	if hashes {
		d.hash = definitionHash(e.Tool)
	}
	b.addDoc(d)
}

// addDoc indexes d. The name field is the server's own name for the tool,
// so that a tool ranks the same whether or not its agent prefixes it.
func (b *builder) addDoc(d doc) {
	terms := map[string]*[numFields]float32{}
	var lens [numFields]float32
	field := func(text string, f int) {
		b.buf = tokens(b.buf[:0], text)
		for _, t := range b.buf {
			tf := terms[t]
			if tf == nil {
				tf = new([numFields]float32)
				terms[t] = tf
			}
			tf[f]++
		}
		lens[f] += float32(len(b.buf))
	}
	field(d.tool, fieldName)
	field(d.title, fieldTitle)
	field(d.server, fieldServer)
	field(d.desc, fieldDesc)
	for _, p := range paramsOf(d.schema) {
		field(p.name, fieldParamName)
		field(p.desc, fieldParamDesc)
	}
	if d.cost == 0 {
		d.cost = Tokens(d.hit())
	}
	d.srv = int32(slices.Index(b.s.servers, d.server))
	if d.srv < 0 {
		d.srv = int32(len(b.s.servers))
		b.s.servers = append(b.s.servers, d.server)
	}
	b.s.byKey[docKey{d.server, d.name}] = int32(len(b.s.docs))
	b.s.docs = append(b.s.docs, d)
	b.terms = append(b.terms, terms)
	b.lens = append(b.lens, lens)
}

// snapshot writes the postings: each term's frequency in each field,
// weighted and divided by the field's length relative to its average
// (BM25F). A compound term that is two terms of the corpus joined
// ("worklog", "filesystem", "datasource") also counts, at half its
// frequency, as each of them.
func (b *builder) snapshot() *snapshot {
	vocab := map[string]bool{}
	for _, terms := range b.terms {
		for t := range terms {
			vocab[t] = true
		}
	}
	parts := map[string][2]string{}
	b.s.parts = parts
	for t := range vocab {
		if a, c, ok := compound(t, vocab); ok {
			parts[t] = [2]string{a, c}
		}
	}
	var avg [numFields]float64
	for _, l := range b.lens {
		for f := range numFields {
			avg[f] += float64(l[f])
		}
	}
	for f := range numFields {
		avg[f] = max(avg[f]/float64(max(len(b.lens), 1)), 1)
	}
	for id, terms := range b.terms {
		for t, tf := range terms {
			p, ok := parts[t]
			if !ok {
				continue
			}
			for _, part := range p {
				to := terms[part]
				if to == nil {
					to = new([numFields]float32)
					terms[part] = to
				}
				for f := range numFields {
					to[f] += tf[f] / 2
				}
			}
		}
		var norm [numFields]float64
		for f := range numFields {
			norm[f] = fieldWeight[f] / (1 - fieldB[f] + fieldB[f]*float64(b.lens[id][f])/avg[f])
		}
		for t, tf := range terms {
			var w float64
			for f := range numFields {
				w += float64(tf[f]) * norm[f]
			}
			b.s.postings[t] = append(b.s.postings[t], posting{doc: int32(id), tf: float32(w)})
		}
	}
	b.s.vocab = make([]string, 0, len(b.s.postings))
	for t, ps := range b.s.postings {
		sort.Slice(ps, func(i, j int) bool { return ps[i].doc < ps[j].doc })
		b.s.vocab = append(b.s.vocab, t)
	}
	sort.Strings(b.s.vocab)
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
