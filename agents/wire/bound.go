package wire

// The bound on one downstream message (the gateway's 64 MiB rule,
// mcp.max_message_bytes), on the paths that read a downstream's HTTP
// answer: ReadMessage and ReadPieces for a JSON answer the client reads
// itself (ClientCall), BoundBody under mcp-go's client, which reads a JSON
// answer whole (json.Decoder) and an SSE line whole
// (bufio.Reader.ReadString) with no bound (v1.2.1). A message past the
// bound ends the read with a *TooLargeError after at most the bound was
// read of it. Gap: mcp-go's client has no limit on what it reads. Buys:
// a downstream cannot make the gateway hold more than the bound per
// message; large answers are read once, in pooled pieces, not in a growing
// buffer (test/bench/README.md, "Large results"). Retired by: a message
// bound in mcp-go's client transports.

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
)

// ErrTooLarge is what every *TooLargeError is (errors.Is).
var ErrTooLarge = errors.New("downstream message too large")

// TooLargeError: a downstream message passed the bound of Limit bytes.
type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return "the downstream's message is larger than " + sizeText(e.Limit) + ", the limit of one message"
}

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// sizeText writes n bytes in MiB when it is a whole number of them.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadMessage reads resp's body, one JSON message, within limit bytes. A
// declared length is read into a buffer of that size, so the message is
// held once, without the copies of a growing buffer.
func ReadMessage(resp *http.Response, limit int) ([]byte, error) {
	if resp.ContentLength > int64(limit) {
		return nil, &TooLargeError{Limit: limit}
	}
	if n := resp.ContentLength; n >= 0 {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return ReadUnknown(resp.Body, limit)
}

// ReadUnknown reads r to its end, at most limit bytes, when its length is
// not declared (a chunked answer): in pooled pieces, then into one buffer
// of the size read. io.ReadAll's growing buffer allocates about twice a
// large message's size on the way; this allocates it once.
func ReadUnknown(r io.Reader, limit int) ([]byte, error) {
	p, err := ReadPieces(r, limit, limit)
	defer p.Free()
	if err != nil {
		return nil, err
	}
	return p.Bytes(), nil
}

// Pieces is what ReadPieces read, in pooled pieces.
type Pieces struct {
	list  []*[]byte
	total int  // bytes read
	last  int  // bytes in the last piece
	More  bool // the reader was not read to its end
}

// ReadPieces reads r to its end, or until more than stop bytes are read
// (More), in pooled pieces; a message of more than limit bytes is an
// error.
func ReadPieces(r io.Reader, limit, stop int) (*Pieces, error) {
	p := &Pieces{last: pieceSize}
	for {
		if p.last == pieceSize {
			p.list, p.last = append(p.list, piecePool.Get().(*[]byte)), 0
		}
		n, err := r.Read((*p.list[len(p.list)-1])[p.last:])
		p.last, p.total = p.last+n, p.total+n
		if p.total > limit {
			return p, &TooLargeError{Limit: limit}
		}
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		if p.total > stop {
			p.More = true
			return p, nil
		}
	}
}

// Slices are the bytes read, piece by piece.
func (p *Pieces) Slices() [][]byte {
	out := make([][]byte, len(p.list))
	for i, b := range p.list {
		out[i] = *b
	}
	out[len(out)-1] = out[len(out)-1][:p.last]
	return out
}

// Bytes is what was read, in one buffer of its size.
func (p *Pieces) Bytes() []byte {
	out := make([]byte, 0, p.total)
	for _, b := range p.Slices() {
		out = append(out, b...)
	}
	return out
}

// Free gives the pieces back; p is not used after.
func (p *Pieces) Free() {
	for _, b := range p.list {
		piecePool.Put(b)
	}
	p.list = nil
}

// pieceSize is the size of the pieces ReadPieces reads in.
const pieceSize = 32 << 10

var piecePool = sync.Pool{New: func() any { b := make([]byte, pieceSize); return &b }}

// BoundBody bounds the body of resp, a downstream's answer to mcp-go's
// client, to limit bytes per message: the whole body, or each event of an
// SSE stream (a stream lives as long as its session; only its events are
// bounded). A message past it is noted in note (nil: not noted).
func BoundBody(resp *http.Response, limit int, note *atomic.Pointer[TooLargeError]) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &boundedBody{rc: resp.Body, limit: limit, sse: mt == "text/event-stream", note: note}
}

// boundedBody ends a body with a *tooLargeError once one message has
// passed limit bytes. In an SSE stream a message ends at a blank line
// ("\n\n" or "\r\n\r\n"; a stream that ends its lines with a lone "\r" is
// counted as one message).
type boundedBody struct {
	rc    io.ReadCloser
	limit int
	sse   bool
	n     int  // bytes of the current message
	nl    bool // sse: the last byte but "\r" was a "\n"
	note  *atomic.Pointer[TooLargeError]
	err   error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if !b.sse {
		b.n += n
	} else {
		for _, c := range p[:n] {
			switch c {
			case '\n':
				if b.nl {
					b.n = 0
				}
				b.nl = true
			case '\r':
			default:
				b.nl = false
				b.n++
			}
		}
	}
	if b.n > b.limit {
		e := &TooLargeError{Limit: b.limit}
		b.err = e
		if b.note != nil {
			b.note.Store(e)
		}
		return 0, e
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
