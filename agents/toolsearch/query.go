package toolsearch

// What a query asks for: its terms and their weights (queryTerms), from
// its words, the names of things it gives (an email address, an issue key,
// a number), the other forms of its words the catalog uses (related) and
// their synonyms.

import (
	"sort"
	"strings"
)

// queryTerms are the terms of a query with their weights: its own terms 1;
// the terms its synonyms give, and the other forms of its words that the
// catalog uses (related), synonymWeight, unless the query has them itself.
func (s *snapshot) queryTerms(text string) map[string]float64 {
	terms := map[string]float64{}
	var words []string
	for _, w := range strings.Fields(text) {
		// A name of a thing says what kind of thing the request is about;
		// its parts (a mailbox's host, an issue key's project) name no tool.
		switch w = strings.TrimFunc(w, isTrailing); {
		case isAddress(w):
			terms["email"] = 1
		case isIssueKey(w):
			terms["issu"] = 1
		case isNumber(w): // a value ("42", "4.2.1", "2,000"), not what a tool does
		case isNumber(strings.TrimPrefix(w, "v")) && strings.Count(w, ".") > 0: // "v4.2"
			terms["version"] = 1
		default:
			words = tokens(words, w)
		}
	}
	for _, t := range words {
		terms[t] = 1
	}
	if strings.Contains(text, "://") { // the request names a URL: tools that take one
		terms["url"] = 1
	}
	own := make([]string, 0, len(terms))
	for t := range terms {
		own = append(own, t)
	}
	for _, t := range own {
		w := synonymWeight
		if len(s.postings[t]) == 0 {
			w = 1 // no tool says it: the words of the same meaning speak for it
		}
		for _, syn := range synonyms[t] {
			if terms[syn] < w {
				terms[syn] = w
			}
		}
		for _, r := range s.related(t) {
			if terms[r] < w {
				terms[r] = w
			}
		}
	}
	return terms
}

// isTrailing is punctuation around a word of a request: "(PROJ-12)," or
// "bob@example.com.".
func isTrailing(r rune) bool { return strings.ContainsRune(`.,;:!?()[]{}"'`, r) }

// isIssueKey reports whether w is an issue tracker's key: a project key of
// capital letters (digits after the first), a hyphen and a number, as
// "PROJ-12" or "OPS2-7".
func isIssueKey(w string) bool {
	key, num, ok := strings.Cut(w, "-")
	if !ok || len(key) < 2 || num == "" || key[0] < 'A' || key[0] > 'Z' {
		return false
	}
	for _, c := range key {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNumber reports whether w is a number: digits, with dots or commas
// between them.
func isNumber(w string) bool {
	if w == "" || w[0] < '0' || w[0] > '9' {
		return false
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; (c < '0' || c > '9') && c != '.' && c != ',' {
			return false
		}
	}
	return true
}

// isAddress reports whether w is an email address (local@domain.tld).
func isAddress(w string) bool {
	at := strings.IndexByte(w, '@')
	return at > 0 && !strings.Contains(w, "://") && strings.Contains(w[at+1:], ".")
}

// Two terms are forms of one word (related) when they share a beginning of
// at least minRelated letters and the longer goes on past it by at most
// maxSuffix letters (a derivational ending: "-ion", "-ment", "-ize").
const (
	minRelated = 5
	maxSuffix  = 4
)

// related returns the terms of the catalog that are another form of t that
// the stemmer leaves apart: the Snowball stemmer takes inflections off
// ("creates", "created": creat) but keeps most derived words whole
// ("creation", "notification" against "notify": notif, notifi;
// "subscription" against "subscribe"; "summarise" against "summarize").
// Two terms are related when they share their first letters, at least
// minRelated of them and all but at most one letter of the shorter, and
// the longer has at most maxSuffix letters more.
func (s *snapshot) related(t string) []string {
	if len(t) < minRelated || !isASCIILower(t) {
		return nil
	}
	p := t[:minRelated]
	var out []string
	for i := sort.SearchStrings(s.vocab, p); i < len(s.vocab) && strings.HasPrefix(s.vocab[i], p); i++ {
		v := s.vocab[i]
		if _, compound := s.parts[v]; v == t || compound {
			continue // a compound ("calendarid") already counts as its parts
		}
		n := minRelated
		for n < len(v) && n < len(t) && v[n] == t[n] {
			n++
		}
		if n >= min(len(v), len(t))-1 && max(len(v), len(t))-n <= maxSuffix {
			out = append(out, v)
		}
	}
	return out
}

// synonyms are words that requests and tool descriptions use for the same
// thing: a query term adds its synonyms at synonymWeight. The groups are
// the everyday words of software tools (actions, and the things they act
// on), not a list made for any one catalog; a word in a group should mean
// the others wherever a tool catalog uses it.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, group := range [][]string{
		// actions
		{"find", "search", "lookup", "locate"},
		{"delete", "remove", "erase", "destroy", "purge"},
		{"create", "add", "new", "make", "insert"},
		{"update", "edit", "modify", "change", "alter"},
		{"get", "fetch", "retrieve", "obtain"},
		{"show", "view", "display", "read"},
		{"list", "enumerate", "browse"},
		{"send", "post", "deliver"},
		{"run", "execute", "invoke"},
		{"start", "launch", "begin"},
		{"stop", "halt", "terminate", "kill"},
		{"cancel", "abort"},
		{"save", "store", "persist", "keep"},
		{"remember", "memorize", "memory", "recall"},
		{"copy", "duplicate", "clone"},
		{"upload", "attach"},
		{"restart", "reboot"},
		{"type", "enter", "input"},
		{"schedule", "book"},
		{"describe", "explain", "summary", "detail"},
		{"check", "verify", "validate", "test"},
		// things
		{"directory", "folder", "dir"},
		{"email", "mail", "inbox"},
		{"event", "meeting", "appointment"},
		{"issue", "ticket", "bug"},
		{"repository", "repo"},
		{"database", "db"},
		{"kubernetes", "k8s", "cluster"},
		{"message", "msg", "chat"},
		{"page", "website", "webpage", "site"},
		{"url", "link", "address"},
		{"user", "member", "person", "people"},
		{"team", "group"},
		{"document", "doc"},
		{"image", "picture", "photo"},
		{"error", "exception", "crash", "failure"},
		{"alert", "alarm"},
		{"secret", "password", "credential"},
		{"config", "configuration", "setting"},
		{"environment", "env"},
		{"statistic", "stat", "metric"},
		{"tag", "label"},
		{"comment", "reply"},
		{"field", "element", "box"},
		{"spreadsheet", "sheet"},
		{"invoice", "bill"},
		{"customer", "client"},
		{"pipeline", "workflow"},
		{"note", "memo"},
	} {
		for _, w := range group {
			for _, syn := range group {
				if syn != w && stem(syn) != stem(w) {
					m[stem(w)] = append(m[stem(w)], stem(syn))
				}
			}
		}
	}
	// Abbreviations that stand for several words.
	m["pr"] = []string{"pull", "request"}
	m["mr"] = []string{"merge", "request"}
	return m
}()
