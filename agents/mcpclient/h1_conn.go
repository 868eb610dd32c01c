package mcpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// One connection of h1Transport (h1.go) and one exchange on it: the
// request written in one flush, the response head read, the body streamed
// from the connection and the connection pooled or closed when it ends.

// errH1HeadTooLarge is a response head longer than the limit.
var errH1HeadTooLarge = errors.New("server response headers exceeded the limit")

// h1Conn is one connection: its buffered reader and writer, and where it
// belongs in the pool.
type h1Conn struct {
	t      *h1Transport
	key    string // host:port
	gen    uint64 // the transport's generation when dialed
	conn   net.Conn
	br     *bufio.Reader // reads through the h1Conn, for the head limit
	w      connWriter
	bw     *bufio.Writer // writes through w
	limit  int64         // bytes br may still read; bounds a response head
	idleAt time.Time     // when it was pooled; guarded by t.mu while pooled

	// Built once per connection, so that a call allocates neither.
	alive     func() bool // reports whether the idle connection is usable
	interrupt func()      // makes blocked and future I/O fail at once
}

// connWriter writes to a connection and keeps its first error:
// http.Request.Write reports a failed write of the body as net/http's own
// error type, which hides the connection's error from the callers' checks
// (isLost: a reset or broken pipe is a lost session).
type connWriter struct {
	conn net.Conn
	err  error
}

func (w *connWriter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// assumeAlive is the check of a connection that cannot be peeked at.
func assumeAlive() bool { return true }

// Read reads from the connection for br, failing once a response head
// passes the limit.
func (pc *h1Conn) Read(p []byte) (int, error) {
	if pc.limit <= 0 {
		return 0, fmt.Errorf("%w of %d bytes", errH1HeadTooLarge, pc.t.maxHeaderBytes)
	}
	if int64(len(p)) > pc.limit {
		p = p[:pc.limit]
	}
	n, err := pc.conn.Read(p)
	pc.limit -= int64(n)
	return n, err
}

// roundTrip writes req and reads the response head; the body streams from
// the connection afterwards. On an error the connection is closed.
func (pc *h1Conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	stop := neverStarted
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, pc.interrupt)
	}
	resp, err := pc.exchange(req)
	if err != nil {
		stop()
		pc.conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	reuse := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		pc.release(stop, reuse)
		return resp, nil
	}
	resp.Body = &h1Body{pc: pc, ctx: ctx, src: resp.Body, stop: stop, reuse: reuse}
	return resp, nil
}

// neverStarted is the stop function of a context that cannot end.
func neverStarted() bool { return true }

// exchange writes req in one flush and reads the final response head,
// skipping informational (1xx) responses but 101 as net/http does. The
// head limit covers all of them.
func (pc *h1Conn) exchange(req *http.Request) (*http.Response, error) {
	err := req.Write(pc.bw) // closes req.Body
	if err == nil {
		err = pc.bw.Flush()
	}
	if pc.w.err != nil {
		return nil, pc.w.err // the connection's, not req.Write's wrapping of it
	}
	if err != nil {
		return nil, err
	}
	pc.limit = pc.t.maxHeaderBytes
	defer func() { pc.limit = math.MaxInt64 }()
	for {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		if code := resp.StatusCode; code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// release pools pc after a complete exchange, or closes it: when either
// side asked to close, when the request's context interrupted it (stop
// reports that the interrupt may have run), or when the server sent more
// than the response.
func (pc *h1Conn) release(stop func() bool, reuse bool) {
	if stop() && reuse && pc.br.Buffered() == 0 {
		pc.t.put(pc)
		return
	}
	pc.conn.Close()
}

// h1Body is a response body streaming from its connection. The first of
// its end (pools the connection), a read error or an early Close (close
// it) disposes of the connection; later reads return the same error.
type h1Body struct {
	pc    *h1Conn
	ctx   context.Context
	src   io.ReadCloser // http.ReadResponse's body, reading pc.br
	stop  func() bool   // cancels the context's interrupt
	reuse bool          // neither side asked to close the connection

	mu     sync.Mutex
	closed bool  // Close was called
	err    error // what ended the body (io.EOF at its end); nil while it streams
}

// Read implements io.Reader.
func (b *h1Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	closed, err := b.closed, b.err
	b.mu.Unlock()
	switch {
	case closed:
		return 0, http.ErrBodyReadAfterClose
	case err != nil:
		return 0, err
	}
	// src's own lock orders concurrent reads; once it has seen the end it
	// no longer touches the connection, which may then be pooled.
	n, err := b.src.Read(p)
	if err != nil {
		err = b.end(err)
	}
	return n, err
}

// end records the error that ended the body and disposes of the
// connection, unless Close or another Read did; it returns the error the
// reader gets. An error after the request's context ended is the context's.
func (b *h1Body) end(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return http.ErrBodyReadAfterClose
	case b.err != nil:
		return b.err
	case err == io.EOF:
		b.err = io.EOF
		b.pc.release(b.stop, b.reuse)
		return io.EOF
	}
	b.stop()
	b.pc.conn.Close()
	if b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	b.err = err
	return err
}

// Close implements io.Closer. Before the end of the body it closes the
// connection rather than drain it: the rest may be long or endless (SSE).
func (b *h1Body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.err == nil {
		b.err = http.ErrBodyReadAfterClose
		b.stop()
		b.pc.conn.Close()
	}
	return nil
}
