package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// tokens appends to dst the search terms of s: words split at anything
// that is not a letter or digit, at snake_case and kebab-case separators,
// at camelCase humps (a lower-case letter or digit followed by an upper-case
// one, and the last capital of an acronym before a lower-case letter:
// "HTTPServer" is http, server) and between letters and digits
// ("listObjectsV2" is list, object, v, 2); lower-cased, stop words dropped,
// each reduced by stem.
func tokens(dst []string, s string) []string {
	start := -1 // byte offset of the current word, -1: none
	whole := -1 // byte offset of the current run of letters and digits
	parts := 0  // words found in that run so far
	var prev rune
	add := func(w string) {
		if w = strings.ToLower(w); english.IsStopWord(w) {
			return
		}
		if w = stem(w); w != "" && !stopWords[w] {
			dst = append(dst, w)
		}
	}
	flush := func(end int) {
		if start >= 0 && end > start {
			add(s[start:end])
			parts++
		}
		start = -1
	}
	endRun := func(end int) {
		flush(end)
		if parts > 1 { // "JavaScript", "PromQL": the whole word too, as a request writes it
			add(s[whole:end])
		}
		whole, parts = -1, 0
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			endRun(i)
			prev = r
			continue
		}
		if start >= 0 && boundary(prev, r, s[i+utf8.RuneLen(r):]) {
			flush(i)
		}
		if start < 0 {
			start = i
		}
		if whole < 0 {
			whole = i
		}
		prev = r
	}
	endRun(len(s))
	return dst
}

// boundary reports whether a new word starts at r, which follows prev;
// rest is what follows r.
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// stem reduces an English word to its Snowball (Porter2) stem, so that the
// forms a query and a description use meet: "branches" and "branch",
// "listing", "lists" and "list", "deletion" and "delete", "scheduled" and
// "schedule". Both sides of a match go through it, so a stem need not be a
// word. Words with digits or letters outside a-z are kept as they are.
func stem(w string) string {
	if len(w) <= 2 || !isASCIILower(w) {
		return w
	}
	return english.Stem(w, true)
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// stopWords carry no meaning for choosing a tool (stemmed forms), past
// the Snowball stemmer's own English stop words: words of requests
// ("please", "need", "much") and of descriptions ("using", "via").
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to in on at by for from with into onto as and or
		not no is are was be been it its this that these those i me my we our you your it's
		can could would should will shall do does did please some any all each every one
		which what who whom whose when where how why there here then than so if else also
		just only very up out about over via per using use need want much many like let`) {
		m[stem(w)] = true
	}
	return m
}()
