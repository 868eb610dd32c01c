package wire

import (
	"bytes"
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The hot decodes of a call (Parse, Meta, the downstream's answer in
// ClientCall.Do, PeekResult) read the message's members with jsontext
// instead of encoding/json's reflection, for the shapes that every client
// and server sends: member names in ASCII without escapes, each member the
// gateway reads once. Anything else (an escaped or non-ASCII name, which
// encoding/json folds with Unicode rules; a member twice; a member of a
// type that the reflective decode refuses; JSON that jsontext refuses) is
// decoded as before with encoding/json, so that what is accepted, the
// values read and the errors are the same both ways (FuzzParse,
// FuzzDecodeAnswer). With the switch off (Fast), Parse, Meta and
// PeekResult decode with encoding/json alone.

// memberReader reads one JSON object's members; pooled with its decoder.
// The decoder reads from a bytes.Buffer over b, which jsontext parses in
// place: a bytes.Reader would be copied into the decoder's own buffer, a
// copy of every large result the gateway reads (TestLargeResultCopies).
type memberReader struct {
	src bytes.Buffer
	dec jsontext.Decoder
	b   []byte
}

var memberReaders = sync.Pool{New: func() any { return new(memberReader) }}

// fastOptions accept what encoding/json accepts: names given twice (the
// caller decides) and strings that are not valid UTF-8.
var fastOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// openObject starts reading b, which must hold one JSON object and
// nothing else but whitespace; false when b does not begin with one.
func openObject(b []byte) (*memberReader, bool) {
	r := memberReaders.Get().(*memberReader)
	r.b = b
	r.src = *bytes.NewBuffer(b)
	r.dec.Reset(&r.src, fastOptions...)
	if tok, err := r.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		r.close()
		return nil, false
	}
	return r, true
}

func (r *memberReader) close() {
	r.b = nil
	r.src = bytes.Buffer{}
	r.dec.Reset(&r.src, fastOptions...) // drops the decoder's hold on the input
	memberReaders.Put(r)
}

// next reads the next member: its name as written between the quotes
// (simple reports an ASCII name without escapes) and its value, a slice
// of b. ok is false at the object's end, or on an error (err). At the
// end, err reports anything but whitespace after the object.
func (r *memberReader) next() (name []byte, simple bool, value []byte, ok bool, err bool) {
	if r.dec.PeekKind() == '}' {
		if _, e := r.dec.ReadToken(); e != nil {
			return nil, false, nil, false, true
		}
		for _, c := range r.b[r.dec.InputOffset():] {
			if !isSpace(c) {
				return nil, false, nil, false, true
			}
		}
		return nil, false, nil, false, false
	}
	raw, e := r.dec.ReadValue()
	if e != nil || len(raw) < 2 || raw[0] != '"' {
		return nil, false, nil, false, true
	}
	name, simple = raw[1:len(raw)-1], true
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	start := r.dec.InputOffset() - int64(len(raw))
	v, e := r.dec.ReadValue()
	if e != nil {
		return nil, false, nil, false, true
	}
	end := r.dec.InputOffset()
	// the name, as a slice of b (the decoder's buffer moves on)
	name = r.b[start+1 : start+int64(len(raw))-1]
	return name, simple, r.b[end-int64(len(v)) : end], true, false
}

// members calls f with each member of b, which must hold one JSON object
// and nothing else but whitespace: its name as written between the quotes
// and its value, a slice of b. It reports false when b is not of the
// shapes this file reads (a name escaped or not in ASCII) or f returns
// false; the one loop of every fast read below.
func members(b []byte, f func(name, value []byte) bool) bool {
	r, ok := openObject(b)
	if !ok {
		return false
	}
	defer r.close()
	for {
		name, simple, v, more, bad := r.next()
		if !more {
			return !bad
		}
		if !simple || !f(name, v) {
			return false
		}
	}
}

// foldIs reports an ASCII name equal to upper, encoding/json's
// case-insensitive match of a member to a field (foldName) for ASCII.
func foldIs(name []byte, upper string) bool {
	if len(name) != len(upper) {
		return false
	}
	for i, c := range name {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// rawString is a JSON string value as encoding/json decodes it into a
// string (invalid UTF-8 replaced), and false when raw is not a string.
func rawString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// set stores value in *field, unless the field was set before (a member
// given twice, which the caller leaves to encoding/json).
func set(field *json.RawMessage, value []byte) bool {
	if *field != nil {
		return false
	}
	*field = value
	return true
}

// appendString appends s as a JSON string, as encoding/json writes it: a
// string of printable ASCII that needs no escape is copied between quotes,
// any other through json.Marshal (escapes, invalid UTF-8).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
