package llm

import (
	"encoding/json"
	"unicode/utf8"
)

// jsonReader decodes one JSON text by hand, for the stream chunks that
// arrive once per token, where encoding/json's validation pass and
// reflection were most of the cost of reading a stream.
//
// It never reports an error. Whenever it is not sure that json.Unmarshal
// would give the same value without error (invalid JSON, a value of the
// wrong type, a number where an int is wanted that is not a plain integer,
// a member name with escapes or non-ASCII bytes, a second member for one
// field, deep nesting) it declines: the caller then decodes the text again
// with encoding/json, which also writes the error message. Declining is
// always correct, only slower; accepting must give exactly encoding/json's
// value. Everything read, including skipped values, is validated, so an
// accepted text is valid JSON as a whole.
type jsonReader struct {
	data     []byte
	pos      int
	depth    int
	declined bool
}

// maxReadDepth bounds nesting; encoding/json allows 10000, deeper texts
// decline so that the recursion here stays shallow.
const maxReadDepth = 64

// decline gives up. Moving to the end makes every later read decline too,
// so the decoders need no error checks of their own.
func (r *jsonReader) decline() {
	r.declined = true
	r.pos = len(r.data)
}

// done reports whether the text was read whole without declining.
func (r *jsonReader) done() bool {
	r.space()
	return !r.declined && r.pos == len(r.data)
}

// space skips JSON white space.
func (r *jsonReader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (r *jsonReader) peek() byte {
	r.space()
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// consume reads c if it comes next.
func (r *jsonReader) consume(c byte) bool {
	if r.peek() == c {
		r.pos++
		return true
	}
	return false
}

// literal reads the literal word (true, false, null) or declines.
func (r *jsonReader) literal(word string) {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		r.decline()
		return
	}
	r.pos += len(word)
}

// null reads a null if one comes next. For null encoding/json leaves a
// field as it is or sets it to nil, which is the same here, where every
// field is read once into a zero value; json.RawMessage alone differs.
func (r *jsonReader) null() bool {
	if r.peek() != 'n' {
		return false
	}
	r.literal("null")
	return true
}

// object reads an object, calling member with each member's name (the
// bytes between the quotes, escapes not undone) and the reader at its
// value; member must read the value. null reads as an object without
// members: encoding/json leaves a struct alone for null.
func (r *jsonReader) object(member func(name []byte)) {
	if r.null() {
		return
	}
	if !r.consume('{') || !r.enter() {
		r.decline()
		return
	}
	if !r.consume('}') {
		for !r.declined {
			if r.peek() != '"' {
				r.decline()
				return
			}
			start := r.pos
			r.skipString()
			name := r.data[start:r.pos]
			if r.declined || !r.consume(':') {
				r.decline()
				return
			}
			member(name[1 : len(name)-1])
			if !r.consume(',') {
				break
			}
		}
		if !r.consume('}') {
			r.decline()
		}
	}
	r.depth--
}

// array reads an array, calling elem with the reader at each element;
// elem must read it.
func (r *jsonReader) array(elem func()) {
	if !r.consume('[') || !r.enter() {
		r.decline()
		return
	}
	if !r.consume(']') {
		for !r.declined {
			elem()
			if !r.consume(',') {
				break
			}
		}
		if !r.consume(']') {
			r.decline()
		}
	}
	r.depth--
}

// enter counts one level of nesting; false when it is too deep.
func (r *jsonReader) enter() bool {
	r.depth++
	return r.depth <= maxReadDepth
}

// fieldSet records which fields of one object were seen.
type fieldSet uint32

// field returns the position in names of the field a member name selects,
// matched as encoding/json matches it (exactly, else ignoring ASCII case:
// "Choices" is choices), or -1 for a member the struct lacks. It declines
// for a name with escapes or non-ASCII bytes (encoding/json also folds
// Unicode: "ſ" matches s) and for a second member of one field, which
// encoding/json would merge into the value of the first.
func (r *jsonReader) field(name []byte, seen *fieldSet, names ...string) int {
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			r.decline()
			return -1
		}
	}
	for i, n := range names {
		if asciiEqualFold(name, n) {
			if *seen&(1<<i) != 0 {
				r.decline()
				return -1
			}
			*seen |= 1 << i
			return i
		}
	}
	return -1
}

// asciiEqualFold compares ASCII text ignoring the case of letters only
// ('_' and DEL differ by the same bit as 'a' and 'A').
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// skip reads and validates any value.
func (r *jsonReader) skip() {
	switch r.peek() {
	case '"':
		r.skipString()
	case '{':
		r.object(func([]byte) { r.skip() })
	case '[':
		r.array(r.skip)
	case 't':
		r.literal("true")
	case 'f':
		r.literal("false")
	case 'n':
		r.literal("null")
	default:
		r.number()
	}
}

// raw reads any value into *m as its text, the way json.RawMessage takes
// it (null too). Like encoding/json it copies: an Anthropic block keeps
// its input past the event.
func (r *jsonReader) raw(m *json.RawMessage) {
	r.space()
	start := r.pos
	r.skip()
	if !r.declined {
		*m = append(json.RawMessage(nil), r.data[start:r.pos]...)
	}
}

// number reads a number as the JSON grammar has it, declining for text
// that is not one, and reports whether it is a plain integer (no fraction,
// no exponent).
func (r *jsonReader) number() (integer bool) {
	r.space()
	r.consumeByte('-')
	switch {
	case r.consumeByte('0'):
	case r.digits() == 0:
		r.decline()
		return false
	}
	integer = true
	if r.consumeByte('.') {
		integer = false
		if r.digits() == 0 {
			r.decline()
		}
	}
	if r.consumeByte('e') || r.consumeByte('E') {
		integer = false
		if !r.consumeByte('+') {
			r.consumeByte('-')
		}
		if r.digits() == 0 {
			r.decline()
		}
	}
	return integer
}

// consumeByte reads c if it is the very next byte (no white space).
func (r *jsonReader) consumeByte(c byte) bool {
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// digits reads decimal digits and returns how many.
func (r *jsonReader) digits() int {
	start := r.pos
	for r.pos < len(r.data) && '0' <= r.data[r.pos] && r.data[r.pos] <= '9' {
		r.pos++
	}
	return r.pos - start
}

// readInt64 reads an integer into *n; null leaves it. A fraction or
// exponent (1.0, 1e0) is an error for encoding/json, and so declines, as
// does a number of more than 18 digits (it may overflow).
func (r *jsonReader) readInt64(n *int64) {
	if r.null() {
		return
	}
	start := r.pos
	if !r.number() || r.pos-start > 19 || (r.pos-start > 18 && r.data[start] != '-') {
		r.decline()
		return
	}
	var v int64
	for _, c := range r.data[start:r.pos] {
		if c != '-' {
			v = v*10 + int64(c-'0')
		}
	}
	if r.data[start] == '-' {
		v = -v
	}
	*n = v
}

// readInt reads an integer into *n as readInt64 does.
func (r *jsonReader) readInt(n *int) {
	v := int64(*n)
	r.readInt64(&v)
	if int64(int(v)) != v { // 32-bit platforms
		r.decline()
	}
	*n = int(v)
}
