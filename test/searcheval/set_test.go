// Package searcheval holds a frozen evaluation set for tool-search ranking: a
// catalog of MCP tools (testdata/catalog.json) and the queries people would
// ask of it, each with its expected tool (testdata/queries.json). The test
// here checks only the shape of the set, never a ranking; see README.md.
package searcheval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

type tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

type catalog struct {
	Tools []tool `json:"tools"`
}

type query struct {
	Query  string `json:"query"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

type querySet struct {
	Queries []query `json:"queries"`
}

type schema struct {
	Type       string `json:"type"`
	Properties map[string]struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	} `json:"properties"`
	Required []string `json:"required"`
}

func load(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
}

// words splits s into lower-case words: at every character that is not a
// letter or a digit (so at "_", "-", "." and spaces) and at camelCase
// boundaries ("lookupByEmail" gives lookup, by, email; "HTTPServer" gives
// http, server).
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && i > start {
			prev := rs[i-1]
			switch {
			case unicode.IsLower(prev) && unicode.IsUpper(r):
				// fooBar: a new word at B.
				flush(i)
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				// HTTPServer: a new word at S.
				flush(i)
			case unicode.IsDigit(prev) != unicode.IsDigit(r):
				// v2beta, sev1: letters and digits are separate words.
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
}

func TestWords(t *testing.T) {
	cases := map[string]string{
		"list_pull_request_files":   "list pull request files",
		"get-storage-quota":         "get storage quota",
		"users.lookupByEmail":       "users lookup by email",
		"reports.pipeline_forecast": "reports pipeline forecast",
		"HTTPServer":                "http server",
		"Who's on call for sev1?":   "who s on call for sev 1",
	}
	for in, want := range cases {
		if got := strings.Join(words(in), " "); got != want {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSet(t *testing.T) {
	var c catalog
	var qs querySet
	load(t, "catalog.json", &c)
	load(t, "queries.json", &qs)

	type key struct{ server, name string }
	tools := map[key]bool{}
	servers := map[string]int{}
	for _, tl := range c.Tools {
		k := key{tl.Server, tl.Name}
		if tl.Server == "" || tl.Name == "" {
			t.Errorf("tool with an empty server or name: %+v", k)
		}
		if tools[k] {
			t.Errorf("duplicate tool %s/%s", tl.Server, tl.Name)
		}
		tools[k] = true
		servers[tl.Server]++
		if strings.TrimSpace(tl.Description) == "" {
			t.Errorf("%s/%s: empty description", tl.Server, tl.Name)
		}
		var s schema
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Errorf("%s/%s: inputSchema: %v", tl.Server, tl.Name, err)
			continue
		}
		if s.Type != "object" {
			t.Errorf("%s/%s: inputSchema type %q, want object", tl.Server, tl.Name, s.Type)
		}
		for p, ps := range s.Properties {
			if ps.Type == "" || strings.TrimSpace(ps.Description) == "" {
				t.Errorf("%s/%s: property %s lacks a type or a description", tl.Server, tl.Name, p)
			}
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s/%s: required %s is not a property", tl.Server, tl.Name, r)
			}
		}
	}
	t.Logf("catalog: %d tools from %d servers", len(c.Tools), len(servers))
	if len(c.Tools) < 300 {
		t.Errorf("catalog has %d tools, want at least 300", len(c.Tools))
	}
	if len(servers) < 10 {
		t.Errorf("catalog has %d servers, want at least 10", len(servers))
	}

	if len(qs.Queries) < 60 {
		t.Errorf("%d queries, want at least 60", len(qs.Queries))
	}
	seen := map[string]bool{}
	noWord := 0
	for _, q := range qs.Queries {
		if strings.TrimSpace(q.Query) == "" {
			t.Errorf("empty query for %s/%s", q.Server, q.Tool)
		}
		if seen[q.Query] {
			t.Errorf("duplicate query %q", q.Query)
		}
		seen[q.Query] = true
		if !tools[key{q.Server, q.Tool}] {
			t.Errorf("query %q expects %s/%s, which is not in the catalog", q.Query, q.Server, q.Tool)
		}
		nameWords := map[string]bool{}
		for _, w := range words(q.Tool) {
			nameWords[w] = true
		}
		shared := false
		for _, w := range words(q.Query) {
			if nameWords[w] {
				shared = true
				break
			}
		}
		if !shared {
			noWord++
		}
	}
	t.Logf("queries: %d; sharing no word with the expected tool's name: %d (%.0f%%)",
		len(qs.Queries), noWord, 100*float64(noWord)/float64(max(len(qs.Queries), 1)))
	if 2*noWord < len(qs.Queries) {
		t.Errorf("%d of %d queries share no word with the expected tool's name, want at least half", noWord, len(qs.Queries))
	}
}
