package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// A body of unknown length is read whole, in pieces, whatever sizes the
// reads return, and no more than the limit.
func TestReadUnknown(t *testing.T) {
	const limit = 3*pieceSize + 10
	for _, n := range []int{0, 1, pieceSize - 1, pieceSize, pieceSize + 1, 2*pieceSize + 7, limit, limit + 1, 4 * pieceSize} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte('a' + i%26)
		}
		for name, r := range map[string]func() io.Reader{
			"whole":              func() io.Reader { return bytes.NewReader(body) },
			"one byte at a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(body)) },
			"data with EOF":      func() io.Reader { return iotest.DataErrReader(bytes.NewReader(body)) },
			"half reads":         func() io.Reader { return iotest.HalfReader(bytes.NewReader(body)) },
		} {
			got, err := ReadUnknown(r(), limit)
			switch {
			case n > limit:
				if !errors.Is(err, ErrTooLarge) {
					t.Errorf("%d bytes, %s: %d bytes, %v; want too large", n, name, len(got), err)
				}
			case err != nil || !bytes.Equal(got, body) || cap(got) != n:
				t.Errorf("%d bytes, %s: %d bytes (cap %d), %v", n, name, len(got), cap(got), err)
			}
		}
	}
	boom := errors.New("connection reset")
	if _, err := ReadUnknown(io.MultiReader(strings.NewReader("{"), iotest.ErrReader(boom)), limit); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v", err)
	}
}
