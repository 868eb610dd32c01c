package toolsearch

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// thousandTools is the catalog three times over (each copy under servers
// of its own name), cut to 1,000 tools.
func thousandTools(b *testing.B) []Entry {
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
	x.Search(entries, Query{Text: queries[0]}) // builds the index
	b.ReportAllocs()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res := x.Search(entries, Query{Text: queries[i%len(queries)]})
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
		New().Search(entries, Query{Text: "list pods"})
	}
}
