package config

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a config file.
type Error struct {
	File string
	Line int    // 0 when unknown
	Key  string // dotted key path, "" when unknown
	Msg  string
}

func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem of one load, one per line when printed.
type Errors struct {
	List []Error
	// Warnings are the load's non-fatal findings (as Config.Warnings):
	// a file with errors has warnings too, and both are reported at once.
	Warnings []string
	// Infos are the load's informational findings (as Config.Infos).
	Infos []string
	// Refs are the files the config names, as far as the load read them:
	// a load that failed on a missing one is retried when it appears.
	Refs Refs

	// typed are the keys whose value had the wrong type (reported, and
	// taken out of the tree): later problems at or under them are
	// consequences, not reported again.
	typed map[string]bool
}

func (e *Errors) markTyped(key string) {
	if e.typed == nil {
		e.typed = map[string]bool{}
	}
	e.typed[key] = true
}

// covered reports whether key is at or under a key already reported for
// its type.
func (e *Errors) covered(key string) bool {
	for k := key; k != ""; {
		if e.typed[k] {
			return true
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return false
		}
		k = k[:i]
	}
	return false
}

func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, x := range e.List {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

func (e *Errors) sort() {
	sort.SliceStable(e.List, func(i, j int) bool {
		a, b := e.List[i], e.List[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

// A mapping key written without a space after its colon ("token:abc",
// "X-Api-Key:abc") is one key, and what follows the colon is the value
// meant, maybe a secret. Errors and warnings name such a key by its part
// before the colon, never by the rest.

// fused marks where the rest of a fused key was cut.
const fused = ":…"

// keyPart is one key as an error may name it.
func keyPart(k string) string {
	if i := strings.IndexByte(k, ':'); i >= 0 && k[i:] != fused {
		return k[:i] + fused
	}
	return k
}

// keyName is a key path as an error may name it, "a.b.c".
func keyName(path []string) string {
	parts := make([]string, len(path))
	for i, k := range path {
		parts[i] = keyPart(k)
	}
	return strings.Join(parts, ".")
}

// safeKey cuts a joined key path at a fused key's colon (keyName cuts
// each part; a path joined elsewhere may hold one whole): the parts after
// it cannot be told from the value's text.
func safeKey(key string) string {
	for off := 0; ; {
		i := strings.IndexByte(key[off:], ':')
		if i < 0 {
			return key
		}
		off += i
		if !strings.HasPrefix(key[off:], fused) {
			return key[:off] + fused
		}
		off += len(fused)
	}
}
