package toolsearch

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// fakeEmbedder is an OpenAI provider's Embed against a fake embeddings
// endpoint on 127.0.0.1, with the model bound (as the agents package binds
// tool_search.embeddings.model).
type fakeEmbedder struct {
	e     llm.Embedder
	model string
}

func (f fakeEmbedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	return f.e.Embed(ctx, f.model, inputs)
}

func newFakeEmbeddings(t *testing.T) (*fakellm.Server, Embedder) {
	t.Helper()
	srv := fakellm.New(t)
	p, err := llm.NewOpenAI(llm.ProviderConfig{Kind: "openai", BaseURL: srv.OpenAIBaseURL(), APIKey: "provider-key", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return srv, fakeEmbedder{p.(llm.Embedder), "embed-model"}
}

// concepts embeds a text by the ideas it names, so that words lexical
// ranking cannot connect ("tell", "message") point the same way.
func concepts(text string) []float32 {
	v := make([]float32, fakellm.EmbedDims)
	text = strings.ToLower(text)
	for i, words := range [][]string{{"message", "tell", "chat"}, {"email", "mail"}, {"file", "document"}, {"pod", "cluster"}} {
		for _, w := range words {
			if strings.Contains(text, w) {
				v[i]++
			}
		}
	}
	v[fakellm.EmbedDims-1] = 0.01 // never the zero vector
	return v
}

func embedCatalog() []Entry {
	return []Entry{
		entry("chat", "post_message", "Post a message to a channel."),
		entry("mail", "send_email", "Send an email to one or more recipients."),
		entry("fs", "read_file", "Read a file from disk."),
		entry("k8s", "list_pods", "List the pods of a namespace."),
	}
}

func TestEmbeddingsBatchedAndCachedByDefinition(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	x := New()
	x.UseEmbeddings(emb, nil)
	tools := embedCatalog()

	x.Search(t.Context(), tools, Query{Text: "read a file"})
	reqs := srv.EmbeddingRequests()
	if len(reqs) != 1 || len(reqs[0].Inputs) != len(tools)+1 || reqs[0].Model != "embed-model" {
		t.Fatalf("first search: want one request with the %d tools and the query, got %+v", len(tools), reqs)
	}
	if last := reqs[0].Inputs[len(tools)]; last != "read a file" {
		t.Errorf("the query should come last in the batch, got %q", last)
	}

	// Nothing changed: only the query is embedded; a caller who sees
	// fewer tools meets the same cache.
	x.Search(t.Context(), tools, Query{Text: "list pods"})
	x.Search(t.Context(), tools[:2], Query{Text: "send mail"})
	reqs = srv.EmbeddingRequests()
	if len(reqs) != 3 || !slices.Equal(reqs[1].Inputs, []string{"list pods"}) || !slices.Equal(reqs[2].Inputs, []string{"send mail"}) {
		t.Fatalf("unchanged tools were embedded again: %+v", reqs[1:])
	}

	// One definition changed: it alone is embedded again, with the query.
	changed := slices.Clone(tools)
	changed[2] = entry("fs", "read_file", "Read a text file from disk, or part of it.")
	x.Search(t.Context(), changed, Query{Text: "read a file"})
	reqs = srv.EmbeddingRequests()
	if len(reqs) != 4 || len(reqs[3].Inputs) != 2 || !strings.Contains(reqs[3].Inputs[0], "Read a text file") {
		t.Fatalf("changed tool: want one request with it and the query, got %+v", reqs[3:])
	}
	for _, r := range srv.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer provider-key" {
			t.Errorf("embeddings request carried Authorization %q, want the provider's own key", got)
		}
	}
}

// TestEmbeddingsOneRequestPerQuery is the bound a search keeps once its
// tools are embedded: one provider request, its query's embedding.
func TestEmbeddingsOneRequestPerQuery(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	x := New()
	x.UseEmbeddings(emb, nil)
	entries := thousandTools(t)
	x.Search(t.Context(), entries, Query{Text: "warm up"})
	// The 1,000 are the catalog's definitions under several servers: each
	// definition is embedded once.
	if reqs := srv.EmbeddingRequests(); len(reqs) != 1 || len(reqs[0].Inputs) != len(catalog(t))+1 {
		t.Fatalf("1,000 tools: want one request of each definition and the query, got %d requests", len(reqs))
	}
	queries := []string{"show the logs of the crashing pod", "what time is it in Tokyo", "take a screenshot of the web page"}
	for i, q := range queries {
		x.Search(t.Context(), entries, Query{Text: q})
		reqs := srv.EmbeddingRequests()
		if len(reqs) != i+2 {
			t.Fatalf("query %q made %d requests, want 1", q, len(reqs)-(i+1))
		}
		if in := reqs[i+1].Inputs; !slices.Equal(in, []string{q}) {
			t.Fatalf("query %q: request carried %d inputs, want its own text alone", q, len(in))
		}
	}
}

func TestEmbeddingsFusedByReciprocalRank(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	srv.SetEmbedding(concepts)
	x := New()
	x.UseEmbeddings(emb, nil)
	tools := embedCatalog()

	// No word of the query is in any tool: lexical finds nothing, the
	// embeddings find the chat tool.
	if got := names(x.Search(t.Context(), tools, Query{Text: "tell the team we ship today", Limit: 1})); !slices.Equal(got, []string{"chat__post_message"}) {
		t.Errorf("semantic only: got %v", got)
	}
	// Both rankings agree on the first: it stays first.
	if got := names(x.Search(t.Context(), tools, Query{Text: "send an email", Limit: 2})); len(got) == 0 || got[0] != "mail__send_email" {
		t.Errorf("both agree: got %v", got)
	}
	// A tool named exactly stays first whatever the embeddings say.
	if got := names(x.Search(t.Context(), tools, Query{Text: "k8s__list_pods"})); len(got) == 0 || got[0] != "k8s__list_pods" {
		t.Errorf("named tool: got %v", got)
	}
	// Rank fusion: a tool's score is the sum over both rankings of
	// 1/(60 + its rank). Lexical: a, b (c unmatched); embeddings: c, b, a.
	lex := []scored{{doc: 0, score: 3}, {doc: 1, score: 2}}
	s := &snapshot{docs: []doc{{name: "a", hash: "ha"}, {name: "b", hash: "hb"}, {name: "c", hash: "hc"}}}
	m := &semantic{embed: staticEmbedder{"q": {0, 1}}, v: NewVectors()}
	m.v.vecs = map[string][]float32{"ha": {1, 0}, "hb": {0.6, 0.8}, "hc": {0, 1}}
	want := map[string]float64{"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/62, "c": 1.0 / 61}
	var order []string
	for _, r := range m.fuse(t.Context(), s, []int32{0, 1, 2}, "q", lex) {
		name := s.docs[r.doc].name
		order = append(order, name)
		if r.score != want[name] {
			t.Errorf("fused score of %s %v, want %v", name, r.score, want[name])
		}
	}
	if !slices.Equal(order, []string{"a", "b", "c"}) {
		t.Errorf("fused order %v, want a, b, c", order)
	}
}

type staticEmbedder map[string][]float32

func (s staticEmbedder) Embed(_ context.Context, inputs []string) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		out[i] = slices.Clone(s[in])
	}
	return out, nil
}

func TestEmbeddingsFailureRanksLexically(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	tools := embedCatalog()
	queries := []string{"read a file", "post a message to the channel", "list pods", "tell the team"}
	lexical := New()
	x := New()
	x.UseEmbeddings(emb, nil)

	srv.FailEmbeddings(http.StatusServiceUnavailable)
	for _, q := range queries {
		want := lexical.Search(t.Context(), tools, Query{Text: q})
		if got := x.Search(t.Context(), tools, Query{Text: q}); !slices.Equal(names(got), names(want)) || got.Matched != want.Matched {
			t.Errorf("%q with the provider down: got %v, want the lexical %v", q, names(got), names(want))
		}
	}
	if n := len(srv.EmbeddingRequests()); n != len(queries) {
		t.Errorf("%d requests for %d searches: a failed search must not retry in a loop", n, len(queries))
	}

	// The provider is back: the tools are embedded on the next search.
	srv.FailEmbeddings(0)
	srv.SetEmbedding(concepts)
	if got := names(x.Search(t.Context(), tools, Query{Text: "tell the team", Limit: 1})); !slices.Equal(got, []string{"chat__post_message"}) {
		t.Errorf("after recovery: got %v", got)
	}
}

func TestEmbeddingsConcurrentSearchesEmbedToolsOnce(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	x := New()
	x.UseEmbeddings(emb, nil)
	tools := embedCatalog()
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.Search(t.Context(), tools, Query{Text: []string{"read a file", "list pods"}[i%2]})
		}()
	}
	wg.Wait()
	reqs := srv.EmbeddingRequests()
	if len(reqs) != n {
		t.Fatalf("%d searches made %d requests, want one each", n, len(reqs))
	}
	batches := 0
	for _, r := range reqs {
		if len(r.Inputs) > 1 {
			batches++
		}
	}
	if batches != 1 {
		t.Errorf("the tools were sent in %d requests, want 1", batches)
	}
}

// TestEmbeddingsSharedAcrossIndexes: an index built anew (a reload, or
// another agent with the same model) over the same Vectors embeds no tool
// again.
func TestEmbeddingsSharedAcrossIndexes(t *testing.T) {
	srv, emb := newFakeEmbeddings(t)
	var spaces VectorSpaces
	tools := embedCatalog()
	first := New()
	first.UseEmbeddings(emb, spaces.For("http://provider/v1 embed-model"))
	first.Search(t.Context(), tools, Query{Text: "read a file"})
	again := New()
	again.UseEmbeddings(emb, spaces.For("http://provider/v1 embed-model"))
	again.Search(t.Context(), tools, Query{Text: "list pods"})
	other := New()
	other.UseEmbeddings(emb, spaces.For("http://provider/v1 another-model"))
	other.Search(t.Context(), tools, Query{Text: "list pods"})
	reqs := srv.EmbeddingRequests()
	if len(reqs) != 3 || len(reqs[0].Inputs) != len(tools)+1 || len(reqs[1].Inputs) != 1 || len(reqs[2].Inputs) != len(tools)+1 {
		var sizes []int
		for _, r := range reqs {
			sizes = append(sizes, len(r.Inputs))
		}
		t.Fatalf("inputs per request %v, want [%d 1 %d]: the same space shares vectors, another model does not", sizes, len(tools)+1, len(tools)+1)
	}
}
