package wire

// Large results as a value backed by the downstream's response body (SPEC
// §12: 8 concurrent 60 MB proxied results peak under 1 GiB of resident
// memory). A downstream's JSON answer of more than StreamAbove bytes to a
// call that may take one (ClientCall.Stream: a proxy's fast-path call,
// Call.Streams) is not read whole: the client reads its envelope up to the
// result (openBody) and returns a RawResult whose result is still in the
// response body (Streamed). The caller side copies it into the caller's
// response as it reads it (a BodyAnswer, written by Stream.finish), the
// result checked (valueScan) and copied without its insignificant
// whitespace, so that the gateway holds a few pieces of a result, never
// all of it; Close releases the body (the downstream's response and the
// call's context), and the call's context ending closes it too. The
// downstream client never writes the caller's response. Read whole, a 60
// MB result was alive three times per call (the body, the result member,
// the caller's answer) and, with the garbage collector's default headroom,
// 8 of them peaked at 1.5-1.7 GB (test/bench/README.md, "Large results").
//
// What the copy does differently from the held path (RawResponse), and why:
//   - the result's _meta, resultType and isError members are written last:
//     the copy learns of them as they pass, and a 2026-07-28 caller's
//     answer needs them decorated (decorateMembers), which only their whole
//     value allows; they are small and held. The result's facts (IsError,
//     ResultType, Meta, Size) are known once it is copied: OnClose's
//     functions read them;
//   - a result that asks for input (resultType input_required) is passed
//     on as it came: the held path declines it (its answer is an error for
//     a caller before 2026-07-28), but the copy has written most of it when
//     it learns of it, and no downstream sends a megabyte of input
//     requests;
//   - a downstream that breaks its answer after the copy began (invalid
//     JSON, a message past the bound, a connection cut) cannot be answered
//     with an error any more: the caller's response is aborted
//     (http.ErrAbortHandler), so that its client sees a failed response,
//     not a truncated one, and OnClose's functions get the error (the call
//     is logged and counted as failed).
//
// Gap: mcp-go's client reads a result whole and decodes it into its types
// (and its server encodes it again); neither has a way to stream a result.
// Retired by: none in sight; MCP results are single JSON-RPC messages.
// Off with the wire switch (a result is then held as mcp-go holds it).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// StreamAbove is the size of a downstream answer above which a call that
// may stream its result (ClientCall.Stream) gets it streamed; smaller
// answers are read whole (RawResponse).
const StreamAbove = 1 << 20

// Limits of what a streamed result holds of an answer.
const (
	passPiece        = 32 << 10 // the pieces it reads and writes in
	passKeyLimit     = 64 << 10 // a member's name
	passHeldLimit    = 1 << 20  // a held member of the result (_meta, resultType, isError)
	passMemberLimit  = 1 << 20  // a member of the envelope other than result
	passEnvelopeKeys = 16       // members of the envelope
)

var passPool = sync.Pool{New: func() any { b := make([]byte, passPiece); return &b }}

// ErrAnswerBroken: a streamed result failed after its copy to the caller
// began; the caller's response is aborted.
var ErrAnswerBroken = errors.New("the answer was being passed through to the caller; its response is aborted")

// errBodyUnread is what OnClose's functions get for a streamed result
// closed before it was copied (the caller's request ended first).
var errBodyUnread = errors.New("the result was released before it was read")

// BodyAnswer is a Target's answer to call ID when the result is streamed
// (RawResult.Streamed): Stream.finish copies it into the caller's
// response as it reads it, decorated for a 2026-07-28 caller (Modern) with
// Self (SelfJSON), then closes it.
type BodyAnswer struct {
	ID     any
	Result *RawResult
	Modern bool
	Self   json.RawMessage
}

// Held is a's answer with its result read whole (RawResponse), for an
// answer that is not written at once (the input-required bridge's later
// round); the body is closed.
func (a *BodyAnswer) Held() any {
	if err := a.Result.Hold(); err != nil {
		return rpcErrorFor(a.ID, err, a.Modern)
	}
	if msg, ok := RawResponse(a.ID, a.Result, a.Modern, a.Self); ok {
		return msg
	}
	// A result that asks for input: as it came (the copy passes it so).
	id, err := json.Marshal(a.ID)
	if err != nil {
		return rpcErrorFor(a.ID, err, a.Modern)
	}
	b := append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...)
	return RawAnswer(append(append(b, a.Result.JSON...), '}'))
}

// resultBody is a streamed result's source: the downstream's answer, read
// up to its result object (openBody).
type resultBody struct {
	src     *jsonSource
	v       valueScan
	members []passMember // the envelope's, read before the result
	id      string
	buf     *[]byte // src's pooled piece
	abort   func()  // ends the downstream's response: its context canceled, its body closed
	free    func()  // returns what the reader holds, once it is not reading

	mu     sync.Mutex
	stop   func() bool // the context.AfterFunc that closes it with the call's context; nil: none
	busy   bool        // being copied (copyOut)
	closed bool
	err    error         // what the functions got, once closed
	hooks  []func(error) // OnClose's
}

// onClose runs f once b is closed: now, when it is already.
func (b *resultBody) onClose(f func(error)) {
	b.mu.Lock()
	if !b.closed {
		b.hooks = append(b.hooks, f)
		b.mu.Unlock()
		return
	}
	err := b.err
	b.mu.Unlock()
	f(err)
}

// close releases b and runs the OnClose functions with err, once. A close
// that is not the copy's own while the copy runs only aborts the
// response: the copy fails at its next read and closes b itself.
func (b *resultBody) close(err error, byCopy bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if b.busy && !byCopy {
		b.mu.Unlock()
		b.abort()
		return
	}
	b.closed, b.err = true, err
	hooks, stop := b.hooks, b.stop
	b.hooks = nil
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
	b.abort()
	if b.free != nil {
		b.free()
	}
	passPool.Put(b.buf)
	for _, f := range hooks {
		f(err)
	}
}

// begin takes b for its copy; false when it is closed or being copied.
func (b *resultBody) begin() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.busy {
		return false
	}
	b.busy = true
	return true
}

// openBody reads body, the downstream's JSON-RPC answer to request id (at
// most limit bytes of it), up to its result: the result's source. An
// answer without a result (an error) is returned whole in msg instead.
func openBody(body io.Reader, id string, limit int64) (_ *resultBody, msg []byte, err error) {
	buf := passPool.Get().(*[]byte)
	b := &resultBody{src: &jsonSource{r: body, buf: *buf, limit: limit}, id: id, buf: buf}
	defer func() {
		if msg != nil || err != nil {
			passPool.Put(buf)
		}
	}()
	src, v := b.src, &b.v
	if err := src.take('{'); err != nil {
		return nil, nil, err
	}
	for first := true; ; first = false {
		if c, err := src.peek(); err != nil {
			return nil, nil, err
		} else if first && c == '}' {
			break
		}
		raw, key, err := src.key(v)
		if err == nil {
			err = src.take(':')
		}
		if err != nil {
			return nil, nil, err
		}
		if key == "result" {
			if err := answersID(b.members, id); err != nil {
				return nil, nil, err
			}
			if c, err := src.peek(); err != nil || c != '{' {
				return nil, nil, errors.Join(errors.New("the result is not an object"), err)
			}
			return b, nil, nil
		}
		if err := b.member(raw, key); err != nil {
			return nil, nil, err
		}
		if end, err := b.next(); err != nil || end {
			if err != nil {
				return nil, nil, err
			}
			break
		}
	}
	if c, err := src.next(); err != io.EOF {
		if err == nil {
			err = v.syntax(c, "after top-level value")
		}
		return nil, nil, err
	}
	return nil, joinMembers(b.members), nil
}

// member reads the value of the envelope's member raw (key), after its
// ':'.
func (b *resultBody) member(raw []byte, key string) error {
	if len(b.members) == passEnvelopeKeys {
		return errors.New("too many members")
	}
	m := passMember{raw: raw, key: key}
	if err := b.src.value(&b.v, &m.value, nil, passMemberLimit); err != nil {
		return fmt.Errorf("member %s: %w", raw, err)
	}
	b.members = append(b.members, m)
	return nil
}

// next takes the ',' or '}' after an envelope member; end at '}'.
func (b *resultBody) next() (end bool, err error) {
	c, err := b.src.peek()
	if err != nil {
		return false, err
	}
	b.src.i++
	if c == '}' {
		return true, nil
	}
	if c != ',' {
		return false, b.v.syntax(c, "after object key:value pair")
	}
	return false, nil
}

// copyOut copies r's streamed result through w, reads the rest of the
// answer, and closes r: its facts are set, and its OnClose functions run
// with the error. An error after w began writing names ErrAnswerBroken.
func (r *RawResult) copyOut(w *passWriter) error {
	b := r.body
	if !b.begin() {
		return errBodyUnread
	}
	defer w.release()
	err := b.copy(w, r)
	if err != nil && !w.hold {
		err = fmt.Errorf("%w: %w", ErrAnswerBroken, err)
	}
	b.close(err, true)
	return err
}

// copy copies the result object and reads the envelope's members after it.
func (b *resultBody) copy(w *passWriter, res *RawResult) error {
	if err := w.result(b.src, &b.v, res); err != nil {
		return err
	}
	for {
		if end, err := b.next(); err != nil || end {
			if err != nil {
				return err
			}
			break
		}
		raw, key, err := b.src.key(&b.v)
		if err == nil {
			err = b.src.take(':')
		}
		if err != nil {
			return err
		}
		if err := b.member(raw, key); err != nil {
			return err
		}
	}
	if c, err := b.src.next(); err != io.EOF {
		if err == nil {
			err = b.v.syntax(c, "after top-level value")
		}
		return err
	}
	if err := answersID(b.members, b.id); err != nil {
		return err
	}
	return w.end()
}

// passMember is one member of an envelope as it came.
type passMember struct {
	raw   []byte // the name, as a JSON string
	key   string
	value []byte
}

// answersID checks the envelope's id, if read yet, against id.
func answersID(members []passMember, id string) error {
	for _, m := range members {
		var got string
		if m.key == "id" && (json.Unmarshal(m.value, &got) != nil || got != id) {
			return fmt.Errorf("not the answer to request %s: id %.80s", id, m.value)
		}
		if m.key == "method" {
			return errors.New("a request where the answer was expected")
		}
		if m.key == "error" {
			return errors.New("both an error and a result")
		}
	}
	return nil
}

// joinMembers is an envelope of members.
func joinMembers(members []passMember) []byte {
	b := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.raw...), ':'), m.value...)
	}
	return append(b, '}')
}

// passWriter writes one streamed result: to the caller's response (dst),
// or held in out (hold) and returned as the result's JSON.
type passWriter struct {
	hold    bool
	dst     io.Writer
	ctx     context.Context // the caller's request: when it ends, nothing more is written
	modern  bool            // a 2026-07-28 caller: the result is decorated
	self    json.RawMessage
	sse     bool
	out     []byte // not yet written
	written int    // bytes written
}

// newPassWriter is the writer of the answer to request id on dst, as an
// SSE event (sse) or a JSON body, its head (the JSON-RPC response up to
// its result) pending.
func newPassWriter(dst io.Writer, ctx context.Context, id any, modern, sse bool, self json.RawMessage) (*passWriter, error) {
	idJSON, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	b := (*passPool.Get().(*[]byte))[:0]
	if sse {
		b = append(b, eventHead...)
	}
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), idJSON...), `,"result":`...)
	return &passWriter{dst: dst, ctx: ctx, modern: modern, self: self, sse: sse, out: b}, nil
}

// result copies the result object from src into res's facts and w, the
// held members last.
func (w *passWriter) result(src *jsonSource, v *valueScan, res *RawResult) error {
	src.i++ // '{', seen by openBody
	start := w.written + len(w.out)
	w.out = append(w.out, '{')
	var meta, resultType, isError []byte
	n := 0
	if c, err := src.peek(); err != nil {
		return err
	} else if c == '}' {
		src.i++
	} else {
		for {
			raw, key, err := src.key(v)
			if err == nil {
				err = src.take(':')
			}
			if err != nil {
				return err
			}
			var held *[]byte
			switch key {
			case "_meta":
				held = &meta
			case "resultType":
				held = &resultType
			case "isError":
				held = &isError
			}
			if held != nil {
				*held = (*held)[:0]
				if err := src.value(v, held, nil, passHeldLimit); err != nil {
					return fmt.Errorf("member %s: %w", raw, err)
				}
			} else {
				if n > 0 {
					w.out = append(w.out, ',')
				}
				w.out = append(append(w.out, raw...), ':')
				if err := src.value(v, &w.out, w.flush, 0); err != nil {
					return fmt.Errorf("member %s: %w", raw, err)
				}
				n++
			}
			c, err := src.peek()
			if err != nil {
				return err
			}
			src.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return v.syntax(c, "after object key:value pair")
			}
		}
	}
	if err := json.Unmarshal(orNull(isError), &res.IsError); err != nil {
		return fmt.Errorf("isError: %w", err)
	}
	if err := json.Unmarshal(orNull(resultType), &res.ResultType); err != nil {
		return fmt.Errorf("resultType: %w", err)
	}
	if meta != nil && string(meta) != "null" {
		res.Meta = json.RawMessage(meta)
	}
	if !w.hold && w.modern {
		var err error
		if meta, resultType, err = decorateMembers(meta, res.ResultType, w.self); err != nil {
			return err
		}
	}
	for _, m := range [...]struct {
		name  string
		value []byte
	}{{"_meta", meta}, {"resultType", resultType}, {"isError", isError}} {
		if m.value == nil {
			continue
		}
		if n > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(append(append(append(w.out, '"'), m.name...), `":`...), m.value...)
		n++
	}
	w.out = append(w.out, '}')
	res.Size = w.written + len(w.out) - start
	if w.hold {
		res.JSON, w.out = json.RawMessage(w.out), nil
	}
	return nil
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// flush writes what is pending, once it is a piece's worth.
func (w *passWriter) flush() error {
	if w.hold || len(w.out) < passPiece {
		return nil
	}
	return w.write()
}

func (w *passWriter) write() error {
	if w.ctx.Err() != nil {
		return fmt.Errorf("the caller has gone away: %w", context.Cause(w.ctx))
	}
	if _, err := w.dst.Write(w.out); err != nil {
		return err
	}
	w.written += len(w.out)
	w.out = w.out[:0]
	return nil
}

// end closes the answer and writes what is left of it.
func (w *passWriter) end() error {
	if w.hold {
		return nil
	}
	w.out = append(w.out, '}')
	if w.sse {
		w.out = append(w.out, eventTail...)
	} else {
		w.out = append(w.out, '\n') // as Encode ends a message
	}
	return w.write()
}

func (w *passWriter) release() {
	if w.out != nil && cap(w.out) == passPiece {
		b := w.out[:passPiece]
		passPool.Put(&b)
	}
	w.out = nil
}

// jsonSource is a JSON text read in pieces.
type jsonSource struct {
	r     io.Reader
	buf   []byte
	i, n  int   // buf[i:n] is read and not yet taken
	read  int64 // bytes read
	limit int64
	err   error // the reader's, once it has given one
}

// more reads the next piece; it is called when buf[i:n] is empty.
func (s *jsonSource) more() error {
	for s.err == nil {
		n, err := s.r.Read(s.buf)
		s.i, s.n, s.read, s.err = 0, n, s.read+int64(n), err
		if s.read > s.limit {
			s.err = fmt.Errorf("the message is larger than %d bytes, the limit of one message", s.limit)
			return s.err
		}
		if n > 0 {
			return nil
		}
	}
	return s.err
}

// peek is the next byte that is not whitespace, not taken. The text's end
// is errValueEnd.
func (s *jsonSource) peek() (byte, error) {
	c, err := s.next()
	if err == io.EOF {
		err = errValueEnd
	}
	return c, err
}

// next is peek, but the text's end is io.EOF.
func (s *jsonSource) next() (byte, error) {
	for {
		for ; s.i < s.n; s.i++ {
			if c := s.buf[s.i]; !isSpace(c) {
				return c, nil
			}
		}
		if err := s.more(); err != nil {
			return 0, err
		}
	}
}

// take takes c, the next byte that is not whitespace.
func (s *jsonSource) take(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return (&valueScan{}).syntax(got, fmt.Sprintf("looking for %q", c))
	}
	s.i++
	return nil
}

// key takes an object member's name: raw as it came (a JSON string), key
// decoded.
func (s *jsonSource) key(v *valueScan) (raw []byte, key string, err error) {
	if c, err := s.peek(); err != nil {
		return nil, "", err
	} else if c != '"' {
		return nil, "", v.syntax(c, "looking for beginning of object key string")
	}
	if err := s.value(v, &raw, nil, passKeyLimit); err != nil {
		return nil, "", err
	}
	err = json.Unmarshal(raw, &key)
	return raw, key, err
}

// value takes one JSON value, appending it compacted to *out, and calls
// flush (when not nil) after each piece. limit > 0 bounds *out.
func (s *jsonSource) value(v *valueScan, out *[]byte, flush func() error, limit int) error {
	v.reset()
	base := len(*out)
	for {
		if s.i == s.n {
			if err := s.more(); err == io.EOF {
				return v.end()
			} else if err != nil {
				return err
			}
		}
		n, done, err := v.feed(s.buf[s.i:s.n], out)
		s.i += n
		if err != nil {
			return err
		}
		if limit > 0 && len(*out)-base > limit {
			return fmt.Errorf("larger than %d bytes", limit)
		}
		if flush != nil {
			if err := flush(); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}
