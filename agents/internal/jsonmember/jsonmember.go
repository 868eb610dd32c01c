// Package jsonmember reads the members of a JSON object without decoding
// it: names unescaped as encoding/json unescapes them, values as raw slices
// of the input. The gateway's message parser (agents.ParseMessage, README
// P10 and P18) and the downstream client's answer reader (mcpclient, P19)
// use it on JSON they have checked to be valid.
package jsonmember

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Each calls fn with the name and raw value of each member of obj, a
// JSON object, in order; it reports false when obj is not an object. The
// names are unescaped as encoding/json unescapes them, so a caller keeping
// the last value of each name sees what decoding obj into a
// map[string]json.RawMessage gives, for a fraction of its cost. obj must be
// valid JSON (a member of a checked message is); invalid input never reads
// out of bounds but may be cut short.
func Each(obj []byte, fn func(name string, value []byte)) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return i < len(obj) && obj[i] == '}'
		}
		nameEnd := valueEnd(obj, i)
		name := obj[i:nameEnd]
		i = skipSpace(obj, nameEnd)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = skipSpace(obj, i+1)
		end := valueEnd(obj, i)
		fn(Unquote(name), obj[i:end])
		i = end
	}
}

// IsObject reports JSON text whose first token opens an object.
func IsObject(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && b[i] == '{'
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just after the JSON value starting at i.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = valueEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// Unquote is the string a JSON string literal denotes, as encoding/json
// decodes it (invalid UTF-8 becomes U+FFFD); "" when q is not one.
func Unquote(q []byte) string {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' && bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}
