package wire

import (
	"errors"
	"fmt"
)

// valueScan checks one JSON value as its bytes arrive, in pieces, and
// copies it compacted (whitespace outside strings dropped) to an output
// buffer, so that a value can be passed on without being held whole
// (body.go). It accepts what encoding/json's Valid accepts, and its
// output is what json.Compact makes of the value (FuzzValueScan). Gap:
// encoding/json (and jsontext) read a value, or a string token, whole
// before they hand any of it over.
type valueScan struct {
	state   uint8
	inKey   bool   // stString: the string is an object's key
	lit     string // stLit: the literal's bytes still to come
	hex     uint8  // stHex: the \u escape's digits still to come
	stack   []byte // the open arrays and objects: '[' or '{'
	scanned int64  // bytes scanned, whitespace included
}

// States of valueScan.
const (
	stValue        uint8 = iota // a value begins
	stValueOrClose              // after '[': a value or ']'
	stKeyOrClose                // after '{': a key or '}'
	stKey                       // after ',' in an object: a key
	stColon                     // after a key
	stAfter                     // after a value inside an array or object
	stString
	stEsc
	stHex
	stNeg   // after '-'
	stZero  // a number's integer part is 0
	stInt   // in a number's integer part
	stDot   // after '.'
	stFrac  // in a number's fraction
	stE     // after 'e' or 'E'
	stESign // after the exponent's sign
	stExp   // in the exponent
	stLit   // in true, false or null
	stDone
)

// maxValueDepth is encoding/json's nesting limit.
const maxValueDepth = 10000

// errValueEnd: the input ended inside the value.
var errValueEnd = errors.New("unexpected end of JSON input")

func (v *valueScan) reset() {
	v.state, v.inKey, v.lit, v.hex, v.stack, v.scanned = stValue, false, "", 0, v.stack[:0], 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed scans p, appending the value's compacted bytes to *out, and returns
// how many bytes of p belong to the value. done reports that the value
// ended: the bytes after n are not the value's. A number can only end at
// the byte after it, or at the end of the input (end).
func (v *valueScan) feed(p []byte, out *[]byte) (n int, done bool, err error) {
	o := *out
	defer func() { *out = o; v.scanned += int64(n) }()
	i := 0
	for i < len(p) {
		c := p[i]
		switch v.state {
		case stString:
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' {
				j++
			}
			o = append(o, p[i:j]...)
			if j == len(p) {
				return j, false, nil
			}
			c, i = p[j], j
			switch {
			case c == '"':
				if v.inKey {
					v.state, v.inKey = stColon, false
				} else {
					v.state = stAfter
				}
			case c == '\\':
				v.state = stEsc
			default:
				return i, false, v.syntax(c, "in string literal")
			}
			o = append(o, c)
			i++
			if v.state == stAfter && len(v.stack) == 0 {
				return i, true, nil
			}
			continue
		case stEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.state = stString
			case 'u':
				v.state, v.hex = stHex, 4
			default:
				return i, false, v.syntax(c, "in string escape code")
			}
		case stHex:
			if !isHex(c) {
				return i, false, v.syntax(c, "in \\u hexadecimal character escape")
			}
			if v.hex--; v.hex == 0 {
				v.state = stString
			}
		case stLit:
			if c != v.lit[0] {
				return i, false, v.syntax(c, "in literal")
			}
			if v.lit = v.lit[1:]; v.lit == "" {
				v.state = stAfter
			}
		case stNeg, stZero, stInt, stDot, stFrac, stE, stESign, stExp:
			next, ok := numberStep(v.state, c)
			if !ok {
				if !numberEnds(v.state) {
					return i, false, v.syntax(c, "in numeric literal")
				}
				v.state = stAfter
				if len(v.stack) == 0 {
					return i, true, nil // c is the next value's, or the container's
				}
				continue // c again, after the number
			}
			v.state = next
		default:
			if isSpace(c) {
				i++
				continue
			}
			if err := v.structural(c); err != nil {
				return i, false, err
			}
		}
		o = append(o, c)
		i++
		if v.state == stAfter && len(v.stack) == 0 {
			return i, true, nil
		}
	}
	return i, false, nil
}

// end reports whether the input may end here: after the value, or after a
// number that is the whole value.
func (v *valueScan) end() error {
	if v.state == stDone || (len(v.stack) == 0 && (v.state == stAfter || numberEnds(v.state))) {
		v.state = stDone
		return nil
	}
	return errValueEnd
}

// structural steps over c, which is not whitespace, outside strings,
// numbers and literals.
func (v *valueScan) structural(c byte) error {
	switch v.state {
	case stKeyOrClose, stKey:
		if c == '}' && v.state == stKeyOrClose {
			return v.close('{')
		}
		if c != '"' {
			return v.syntax(c, "looking for beginning of object key string")
		}
		v.state, v.inKey = stString, true
		return nil
	case stColon:
		if c != ':' {
			return v.syntax(c, "after object key")
		}
		v.state = stValue
		return nil
	case stAfter:
		top := v.stack[len(v.stack)-1]
		switch {
		case c == ',' && top == '{':
			v.state = stKey
		case c == ',':
			v.state = stValue
		case c == '}':
			return v.close('{')
		case c == ']':
			return v.close('[')
		case top == '{':
			return v.syntax(c, "after object key:value pair")
		default:
			return v.syntax(c, "after array element")
		}
		return nil
	case stValueOrClose:
		if c == ']' {
			return v.close('[')
		}
	}
	// stValue, or stValueOrClose with a value
	switch c {
	case '{', '[':
		if len(v.stack) >= maxValueDepth {
			return errors.New("exceeded max depth")
		}
		v.stack = append(v.stack, c)
		v.state = stValueOrClose
		if c == '{' {
			v.state = stKeyOrClose
		}
	case '"':
		v.state = stString
	case '-':
		v.state = stNeg
	case '0':
		v.state = stZero
	case 't':
		v.state, v.lit = stLit, "rue"
	case 'f':
		v.state, v.lit = stLit, "alse"
	case 'n':
		v.state, v.lit = stLit, "ull"
	default:
		if c >= '1' && c <= '9' {
			v.state = stInt
			return nil
		}
		return v.syntax(c, "looking for beginning of value")
	}
	return nil
}

func (v *valueScan) close(open byte) error {
	if v.stack[len(v.stack)-1] != open {
		return errors.New("mismatched brackets")
	}
	v.stack = v.stack[:len(v.stack)-1]
	v.state = stAfter
	return nil
}

// numberStep is the state after c in a number in state s; ok is false when
// c is not part of the number.
func numberStep(s uint8, c byte) (next uint8, ok bool) {
	digit := c >= '0' && c <= '9'
	switch s {
	case stNeg:
		if c == '0' {
			return stZero, true
		}
		if digit {
			return stInt, true
		}
	case stZero, stInt:
		switch {
		case digit && s == stInt:
			return stInt, true
		case c == '.':
			return stDot, true
		case c == 'e' || c == 'E':
			return stE, true
		}
	case stDot, stFrac:
		switch {
		case digit:
			return stFrac, true
		case s == stFrac && (c == 'e' || c == 'E'):
			return stE, true
		}
	case stE:
		if c == '+' || c == '-' {
			return stESign, true
		}
		if digit {
			return stExp, true
		}
	case stESign, stExp:
		if digit {
			return stExp, true
		}
	}
	return s, false
}

// numberEnds reports a number that may end in state s.
func numberEnds(s uint8) bool { return s == stZero || s == stInt || s == stFrac || s == stExp }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// syntax is encoding/json's wording of a syntax error at c.
func (v *valueScan) syntax(c byte, context string) error {
	return fmt.Errorf("invalid character %s %s", quoteChar(c), context)
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7f:
		return fmt.Sprintf("%q", rune(c))
	}
	return "'" + string(c) + "'"
}
