package llm

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The appenders below write JSON text the way encoding/json writes it, so
// that a body built by hand is byte for byte the body the SDKs produce
// (their encoders are forks of encoding/json, and encoding/json compacts
// every MarshalJSON result with HTML escaping on).

// jsonPlain marks the ASCII bytes a JSON string carries unescaped: not a
// control character, quote or backslash, and not <, > or & (HTML escaping).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendJSONString appends s as a quoted JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendJSONChars(b, s)
	return append(b, '"')
}

// appendJSONChars appends the escaped characters of s without quotes.
// Invalid UTF-8 becomes U+FFFD; U+2028 and U+2029 are escaped because
// JavaScript treats them as line ends.
func appendJSONChars(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendJSONEscape(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && size == 1:
			esc = `\ufffd`
		case r == '\u2028':
			esc = `\u2028`
		case r == '\u2029':
			esc = `\u2029`
		default:
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		i += size
		start = i
	}
	return append(b, s[start:]...)
}

// appendJSONEscape appends the escape sequence of an ASCII byte that a JSON
// string cannot carry as is.
func appendJSONEscape(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

// appendJSONFloat appends a finite f in encoding/json's float64 format:
// exponent notation outside [1e-6, 1e21), with no padded exponent digits.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 → e-7
		b = b[:n-1]
	}
	return b
}

// appendCompactJSON appends raw, which must be valid JSON, as encoding/json
// writes a json.RawMessage: without insignificant white space, with <, >,
// &, U+2028 and U+2029 escaped, and with invalid UTF-8 left as it is.
func appendCompactJSON(b, raw []byte) []byte {
	const hex = "0123456789abcdef"
	start, inString := 0, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if !inString {
			switch c {
			case '"':
				inString = true
			case ' ', '\t', '\n', '\r':
				b = append(b, raw[start:i]...)
				start = i + 1
			}
			continue
		}
		switch {
		case c == '\\':
			i++ // the escaped byte is never one of the others
		case c == '"':
			inString = false
		case c == '<', c == '>', c == '&':
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			start = i + 1
		case c == 0xe2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xa8:
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[raw[i+2]&0xf])
			i += 2
			start = i + 1
		}
	}
	return append(b, raw[start:]...)
}
