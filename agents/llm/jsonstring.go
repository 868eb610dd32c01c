package llm

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The strings of jsonReader: validated as encoding/json's scanner does and
// decoded as its unquote does.

// readString reads a string into *s; null leaves it.
func (r *jsonReader) readString(s *string) {
	if r.null() {
		return
	}
	if r.peek() != '"' {
		r.decline()
		return
	}
	start := r.pos
	plain := r.skipString()
	switch {
	case r.declined:
	case plain:
		*s = string(r.data[start+1 : r.pos-1])
	default:
		*s = unescape(r.data[start+1 : r.pos-1])
	}
}

// plainString marks the bytes that stand for themselves in a JSON
// string: ASCII, not a control character, quote or backslash. It keeps
// the loop over a string's bytes to one test per byte.
var plainString = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString reads and validates a string; plain reports that it has
// neither escapes nor non-ASCII bytes, so its text is its value.
func (r *jsonReader) skipString() (plain bool) {
	plain = true
	for i := r.pos + 1; i < len(r.data); i++ {
		if plainString[r.data[i]] {
			continue
		}
		switch c := r.data[i]; {
		case c == '"':
			r.pos = i + 1
			return plain
		case c < ' ':
			r.decline()
			return false
		case c >= utf8.RuneSelf:
			plain = false
		case c == '\\':
			plain = false
			n := escapeLen(r.data[i:])
			if n == 0 {
				r.decline()
				return false
			}
			i += n - 1
		}
	}
	r.decline()
	return false
}

// escapeLen returns the length of the valid escape sequence b starts
// with, 0 if it is not one.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if hex4(b) >= 0 {
			return 6
		}
	}
	return 0
}

// hex4 is the value of the \uXXXX escape b starts with, -1 if it is not
// one (encoding/json's getu4).
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var v rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		v = v*16 + rune(c)
	}
	return v
}

// unescape returns the value of the validated string text q (without its
// quotes) as encoding/json's unquote gives it: invalid UTF-8 bytes and
// unpaired surrogates each become U+FFFD.
func unescape(q []byte) string {
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\\':
			i += unescapeOne(&b, q[i:])
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(q[i:])
			b.WriteRune(r) // RuneError for an invalid byte
			i += size
		}
	}
	return b.String()
}

// unescapeOne writes the character of the escape q starts with and
// returns the length it took. A high surrogate takes the low one that
// follows it; a surrogate that does not pair is U+FFFD, and what followed
// it is read on its own.
func unescapeOne(b *strings.Builder, q []byte) int {
	if len(q) < 2 {
		return len(q) // not reached: q was validated
	}
	switch e := q[1]; e {
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r := hex4(q)
		if !utf16.IsSurrogate(r) {
			b.WriteRune(r)
			return 6
		}
		if pair := utf16.DecodeRune(r, hex4(q[6:])); pair != unicode.ReplacementChar {
			b.WriteRune(pair)
			return 12
		}
		b.WriteRune(unicode.ReplacementChar)
		return 6
	default: // " \ /
		b.WriteByte(e)
	}
	return 2
}

// unquoteString is the value of the JSON string literal q (nothing around
// it), and whether q is one that unescape handles.
func unquoteString(q []byte) (string, bool) {
	r := jsonReader{data: q}
	var s string
	if r.peek() == '"' {
		r.readString(&s)
	} else {
		r.decline()
	}
	return s, r.done()
}
