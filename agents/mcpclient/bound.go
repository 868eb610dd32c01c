package mcpclient

// The bound on one downstream message (Options.MaxMessageBytes), on every
// path that reads a downstream: the raw calls read within it themselves
// (rawstream.go, sse.go); mcp-go's client (v1.2.1) reads a JSON answer
// whole (json.Decoder) and an SSE line whole (bufio.Reader.ReadString),
// and a stdio line whole, with no bound at all, so its HTTP bodies
// (Streamable HTTP and the legacy SSE transport) are bounded under it, in
// the session's RoundTripper (boundedBody), and a stdio server's stdout
// before mcp-go reads it (lineBound, stdio.go). A message past the bound
// ends the read with a *tooLargeError, noted where the call can find it
// (mcp-go does not always pass the read's error on: an SSE answer cut
// short is "unexpected nil response"): in the call's context for the
// answer to its own request, on the session for a long-lived stream (the
// legacy SSE transport's answers, the GET stream, a stdio server's
// stdout), which the error ends. The call then fails saying so (settle), after at
// most the bound was read of the message.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
)

// errTooLarge is what every *tooLargeError is (errors.Is).
var errTooLarge = errors.New("downstream message too large")

// tooLargeError: a downstream message passed the bound.
type tooLargeError struct{ limit int }

func (e *tooLargeError) Error() string {
	return "the downstream's message is larger than " + sizeText(e.limit) + ", the limit of one message"
}

func (e *tooLargeError) Is(target error) bool { return target == errTooLarge }

// sizeText writes n bytes in MiB when it is a whole number of them.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readMessage reads resp's body, one JSON message, within limit bytes. A
// declared length is read into a buffer of that size, so the message is
// held once, without the copies of a growing buffer.
func readMessage(resp *http.Response, limit int) ([]byte, error) {
	if resp.ContentLength > int64(limit) {
		return nil, &tooLargeError{limit: limit}
	}
	if n := resp.ContentLength; n >= 0 {
		b := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return readUnknown(resp.Body, limit)
}

// readUnknown reads r to its end, at most limit bytes, when its length is
// not declared (a chunked answer): in pooled pieces, then into one buffer
// of the size read. io.ReadAll's growing buffer allocates about twice a
// large message's size on the way (test/bench/README.md, "Large
// results"); this allocates it once.
func readUnknown(r io.Reader, limit int) ([]byte, error) {
	p, err := readPieces(r, limit, limit)
	defer p.free()
	if err != nil {
		return nil, err
	}
	return p.bytes(), nil
}

// pieces is what readPieces read, in pooled pieces.
type pieces struct {
	list  []*[]byte
	total int  // bytes read
	last  int  // bytes in the last piece
	more  bool // the reader was not read to its end
}

// readPieces reads r to its end, or until more than stop bytes are read
// (more), in pooled pieces; a message of more than limit bytes is an
// error.
func readPieces(r io.Reader, limit, stop int) (*pieces, error) {
	p := &pieces{last: pieceSize}
	for {
		if p.last == pieceSize {
			p.list, p.last = append(p.list, piecePool.Get().(*[]byte)), 0
		}
		n, err := r.Read((*p.list[len(p.list)-1])[p.last:])
		p.last, p.total = p.last+n, p.total+n
		if p.total > limit {
			return p, &tooLargeError{limit: limit}
		}
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		if p.total > stop {
			p.more = true
			return p, nil
		}
	}
}

// slices are the bytes read, piece by piece.
func (p *pieces) slices() [][]byte {
	out := make([][]byte, len(p.list))
	for i, b := range p.list {
		out[i] = *b
	}
	out[len(out)-1] = out[len(out)-1][:p.last]
	return out
}

// bytes is what was read, in one buffer of its size.
func (p *pieces) bytes() []byte {
	out := make([]byte, 0, p.total)
	for _, b := range p.slices() {
		out = append(out, b...)
	}
	return out
}

// free gives the pieces back; p is not used after.
func (p *pieces) free() {
	for _, b := range p.list {
		piecePool.Put(b)
	}
	p.list = nil
}

// pieceSize is the size of the pieces readUnknown reads in.
const pieceSize = 32 << 10

var piecePool = sync.Pool{New: func() any { b := make([]byte, pieceSize); return &b }}

// settle turns the error of a call on s through cli into the
// *tooLargeError its read noted, if any: an answer of the call's own past
// the bound (the session stays), or a message on the session's stream
// (which the bound ended: the session is dropped, to be connected again
// by the next call). ok is false when nothing was noted.
func (s *session) settle(ctx context.Context, cli *client.Client, err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	if n := callOf(ctx).tooLarge; n != nil {
		if e := n.Load(); e != nil {
			return answeredError{e}, true
		}
	}
	if e := s.streamTooLarge.Swap(nil); e != nil {
		s.drop(ctx, cli)
		return answeredError{fmt.Errorf("%w; the stream that carried it was closed", e)}, true
	}
	return err, false
}

// boundBody bounds the body of resp, a downstream's answer to mcp-go's
// client, to limit bytes per message: the whole body, or each event of an
// SSE stream (a stream lives as long as its session; only its events are
// bounded). A message past it is noted in note.
func boundBody(resp *http.Response, limit int, note *atomic.Pointer[tooLargeError]) {
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
	note  *atomic.Pointer[tooLargeError]
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
		e := &tooLargeError{limit: b.limit}
		b.err = e
		if b.note != nil {
			b.note.Store(e)
		}
		return 0, e
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
