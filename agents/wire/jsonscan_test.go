package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// scanAll runs a valueScan over in, fed in pieces of size step, and
// returns its output and whether it took in as exactly one value
// (whitespace around it allowed).
func scanAll(in []byte, step int) ([]byte, bool) {
	var v valueScan
	v.reset()
	var out []byte
	i, done := 0, false
	for i < len(in) && !done {
		end := min(i+step, len(in))
		n, d, err := v.feed(in[i:end], &out)
		if err != nil {
			return out, false
		}
		i, done = i+n, d
	}
	if !done && v.end() != nil {
		return out, false
	}
	for _, c := range in[i:] {
		if !isSpace(c) {
			return out, false
		}
	}
	return out, true
}

// FuzzValueScan: the scanner accepts what json.Valid accepts, whatever the
// pieces it is fed in, and its output is json.Compact's.
func FuzzValueScan(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `""`, `0`, `-0.5e+10`, `1E3`, `true`, `null`, ` {"a" : [1, 2, {"b":"c\"\\\u00e9"}], "d":false } `,
		`{"a":}`, `[1,]`, `01`, `"\x01"`, `{"a":1}}`, `[[[`, `"\ud800"`, `1.`, `-`, `{"a"  1}`, "\"tab\t\"", `[1 2]`, `{,}`, `nul`, `"é"`} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, in []byte, step int) {
		if step <= 0 || step > len(in)+1 {
			step = len(in) + 1
		}
		out, ok := scanAll(in, step)
		if want := json.Valid(in); ok != want {
			t.Fatalf("%q in pieces of %d: scanner says valid %v, json.Valid %v", in, step, ok, want)
		}
		if !ok {
			return
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, in)
		if !bytes.Equal(out, compact.Bytes()) {
			t.Fatalf("%q: output %q, json.Compact %q", in, out, compact.Bytes())
		}
	})
}

// A value ends where it ends: what follows is not taken.
func TestValueScanStops(t *testing.T) {
	for _, c := range []struct {
		in   string
		took int
	}{{`123,`, 3}, {`"a"}`, 3}, {`{"a":[1]} ,`, 9}, {`true]`, 4}, {`-1.5e3}`, 6}} {
		var v valueScan
		v.reset()
		var out []byte
		n, done, err := v.feed([]byte(c.in), &out)
		if err != nil || !done || n != c.took {
			t.Errorf("%q: took %d, done %v, err %v; want %d", c.in, n, done, err, c.took)
		}
	}
}
