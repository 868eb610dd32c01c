// Package toolsearch ranks an agent's tools by what a caller is trying to
// do: search_tools on toolbox and proxy agents, and the search an llm
// agent's model runs instead of being offered every schema.
//
// It owns the index (one per agent), its tokenizer and the ranking: BM25F
// over a tool's name, title, description, server, and parameter names and
// descriptions, each field weighted and length-normalised, with names split
// at snake_case, kebab-case and camelCase and words reduced by the Snowball
// (Porter2) English stemmer. Rarity decides: a word few tools use outweighs
// several that many use (index.go says how). A query also reaches the other
// forms of its words that the stemmer leaves apart and a small table of
// synonyms, and a tool gains from its server's other tools matching. A
// compact BM25F rather than a search library: the corpus is a few thousand
// short documents held in memory, and the libraries that rank (bleve and
// the like) bring a storage engine, analyzers and dozens of modules for
// what is here a few hundred lines that rank 1,000 tools in well under a
// millisecond (BenchmarkSearch1000).
//
// Optionally (UseEmbeddings, embed.go) a ranking by embeddings is fused
// with the lexical one by reciprocal rank: tools are embedded once per
// definition (the pins hash), the query once per search; when the provider
// fails, the lexical ranking answers alone.
//
// It decides nothing about who may see what. The caller hands Search the
// tools its caller may use, exactly as its own tool list shows them (the
// same path that applies policy and, where configured, tool pins); the
// index ranks those and nothing else, so two callers with different rules
// get different answers from one index and no per-caller index is kept.
// The index keeps itself current from those lists: a tool that is new or
// whose definition changed is (re)indexed on the query that first sees it,
// so a tools/list_changed or a reload shows at the next search.
package toolsearch
