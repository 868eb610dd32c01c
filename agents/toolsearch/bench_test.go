package toolsearch

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// thousandTools is the catalog three times over (each copy under servers
// of its own name), cut to 1,000 tools.
func thousandTools(b testing.TB) []Entry {
	base := catalog(b)
	var out []Entry
	for copyN := 0; len(out) < 1000; copyN++ {
		for _, e := range base {
			if len(out) == 1000 {
				break
			}
			srv := fmt.Sprintf("%s%d", e.Server, copyN)
			out = append(out, Entry{Server: srv, Name: srv + "__" + e.Tool.Name, Tool: e.Tool})
		}
	}
	return out
}

// BenchmarkSearch1000 is one search_tools over 1,000 tools, the index
// warm: what a call costs once the index holds the caller's tools (the
// check that it does, and the ranking). Target: 2 ms p50 on 2 cores.
func BenchmarkSearch1000(b *testing.B) {
	entries := thousandTools(b)
	x := New()
	queries := []string{"show the logs of the crashing pod", "open a bug report on github for the crash in the login page",
		"what time is it in Tokyo", "take a screenshot of the web page", "count documents in the orders collection in mongo"}
	x.Search(b.Context(), entries, Query{Text: queries[0]}) // builds the index
	b.ReportAllocs()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res := x.Search(b.Context(), entries, Query{Text: queries[i%len(queries)]})
		took = append(took, time.Since(start))
		if len(res.Tools) == 0 {
			b.Fatal("no result")
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
}

// BenchmarkIndex1000 builds the index of 1,000 tools from scratch: what the
// first search after a reload, or a change of every tool, costs.
func BenchmarkIndex1000(b *testing.B) {
	entries := thousandTools(b)
	b.ReportAllocs()
	for b.Loop() {
		New().Search(b.Context(), entries, Query{Text: "list pods"})
	}
}

// BenchmarkSearch1000Embeddings is BenchmarkSearch1000 with the ranking by
// embeddings fused in, against an in-process embedder of 768 dimensions
// (nomic-embed-text's): the gateway's own cost of a fused search, without
// the provider's time to embed the query (one request per search).
func BenchmarkSearch1000Embeddings(b *testing.B) {
	entries := thousandTools(b)
	x := New()
	x.UseEmbeddings(hashEmbedder(768), nil)
	queries := []string{"show the logs of the crashing pod", "open a bug report on github for the crash in the login page",
		"what time is it in Tokyo", "take a screenshot of the web page", "count documents in the orders collection in mongo"}
	x.Search(b.Context(), entries, Query{Text: queries[0]}) // builds the index, embeds the tools
	b.ReportAllocs()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res := x.Search(b.Context(), entries, Query{Text: queries[i%len(queries)]})
		took = append(took, time.Since(start))
		if len(res.Tools) == 0 {
			b.Fatal("no result")
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
}

// hashEmbedder gives each text a fixed pseudo-random vector of n
// dimensions, at no cost worth counting.
type hashEmbedder int

func (n hashEmbedder) Embed(_ context.Context, inputs []string) ([][]float32, error) {
	out := make([][]float32, len(inputs))
	for i, in := range inputs {
		h := fnv.New64a()
		_, _ = h.Write([]byte(in))
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		v := make([]float32, int(n))
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}
