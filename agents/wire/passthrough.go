package wire

// Passing a large result through (SPEC §12: 8 concurrent 60 MB proxied
// results peak under 1 GiB of resident memory). A downstream's answer of
// more than PassThroughAbove bytes to a proxy's fast-path call is not read
// whole: Relay reads it in pieces and writes the caller's answer as the
// pieces arrive, the result member checked (valueScan) and copied without
// its insignificant whitespace, so that the gateway holds a few pieces of
// a result, never all of it. Read whole, a 60 MB result was alive three
// times per call (the body, the result member, the caller's answer) and,
// with the garbage collector's default headroom, 8 of them peaked at
// 1.5-1.7 GB (test/bench/README.md, "Large results").
//
// What Relay does differently from the held path (RawResponse), and why:
//   - the result's _meta, resultType and isError members are written last:
//     Relay learns of them as they pass, and a 2026-07-28 caller's answer
//     needs them decorated (decorate), which only their whole value
//     allows; they are small and held;
//   - a result that asks for input (resultType input_required) is passed
//     on as it came: the held path declines it (its answer is an error for
//     a caller before 2026-07-28), but Relay has written most of it when
//     it learns of it, and no downstream sends a megabyte of input
//     requests;
//   - a downstream that breaks its answer after the result began to flow
//     (invalid JSON, a message past the bound, a connection cut) cannot be
//     answered with an error any more: the caller's response is aborted
//     (http.ErrAbortHandler), so that its client sees a failed response, not
//     a truncated one, and the call is logged and counted as failed.
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
	"net/http"
	"sync"
)

// PassThroughAbove is the size of a downstream answer above which Relay
// passes it through; smaller answers are read whole (RawResponse).
const PassThroughAbove = 1 << 20

// Limits of what Relay holds of an answer.
const (
	passPiece        = 32 << 10 // the pieces it reads and writes in
	passKeyLimit     = 64 << 10 // a member's name
	passHeldLimit    = 1 << 20  // a held member of the result (_meta, resultType, isError)
	passMemberLimit  = 1 << 20  // a member of the envelope other than result
	passEnvelopeKeys = 16       // members of the envelope
)

var passPool = sync.Pool{New: func() any { b := make([]byte, passPiece); return &b }}

// PassThrough is where a fast-path call's downstream result may be passed
// through to: the call's response (Stream) and what the answering agent
// puts in a result for a 2026-07-28 caller.
type PassThrough struct {
	s      *Stream
	self   json.RawMessage // the agent's identity (SelfJSON)
	before func()          // runs before the answer is written; nil: none
	gate   func() bool     // Call.Gated's; nil: none
}

// Passed is a Target's answer when the answer went out with the result
// (Relay): there is nothing more to write.
var Passed any = passedAnswer{}

type passedAnswer struct{}

// ErrAnswerBroken: a passed-through answer failed after its result began
// to flow; the caller's response is aborted.
var ErrAnswerBroken = errors.New("the answer was being passed through to the caller; its response is aborted")

// Relay reads body, the downstream's JSON-RPC answer to request id, at most
// limit bytes of it, and writes it to the caller as the call's answer. It
// returns the result's facts (Passed set, JSON nil). When the call's
// response has been answered meanwhile (the bridge's gate, a caller gone)
// the result is held and returned (JSON set, Passed not). An answer
// without a result (an error) is returned whole in msg instead, and
// nothing is written. An error that names ErrAnswerBroken came after the
// answer began.
func (p *PassThrough) Relay(body io.Reader, id string, limit int64) (res *RawResult, msg []byte, err error) {
	buf := passPool.Get().(*[]byte)
	defer passPool.Put(buf)
	src := &jsonSource{r: body, buf: *buf, limit: limit}
	var v valueScan
	if err := src.take('{'); err != nil {
		return nil, nil, err
	}
	var members []passMember // the envelope's, but for the result
	var w *passWriter
	for first := true; ; first = false {
		if c, err := src.peek(); err != nil {
			return nil, nil, w.fail(err)
		} else if first && c == '}' {
			break
		}
		raw, key, err := src.key(&v)
		if err == nil {
			err = src.take(':')
		}
		if err != nil {
			return nil, nil, w.fail(err)
		}
		if key == "result" && w == nil {
			if err := answersID(members, id); err != nil {
				return nil, nil, err
			}
			if c, err := src.peek(); err != nil || c != '{' {
				return nil, nil, errors.Join(errors.New("the result is not an object"), err)
			}
			if w, err = p.begin(); err != nil {
				return nil, nil, err
			}
			defer w.release() // after end or fail
			if res, err = w.result(src, &v); err != nil {
				return nil, nil, w.fail(err)
			}
		} else {
			if len(members) == passEnvelopeKeys {
				return nil, nil, w.fail(errors.New("too many members"))
			}
			m := passMember{raw: raw, key: key}
			if err := src.value(&v, &m.value, nil, passMemberLimit); err != nil {
				return nil, nil, w.fail(fmt.Errorf("member %s: %w", raw, err))
			}
			members = append(members, m)
		}
		c, err := src.peek()
		if err != nil {
			return nil, nil, w.fail(err)
		}
		src.i++
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, nil, w.fail(v.syntax(c, "after object key:value pair"))
		}
	}
	if c, err := src.next(); err != io.EOF {
		if err == nil {
			err = v.syntax(c, "after top-level value")
		}
		return nil, nil, w.fail(err)
	}
	if w == nil {
		return nil, joinMembers(members), nil
	}
	if err := answersID(members, id); err != nil {
		return nil, nil, w.fail(err)
	}
	if err := w.end(); err != nil {
		return nil, nil, w.fail(err)
	}
	return res, nil, nil
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

// passWriter writes one passed-through answer.
type passWriter struct {
	hold    bool // the result is held in out and returned, not written
	s       *Stream
	self    json.RawMessage
	sse     bool
	out     []byte // not yet written
	written int    // bytes written
}

// begin takes the call's response for the answer and writes its head: the
// notifications taken so far, then the JSON-RPC response up to its result.
// The answer is an SSE event when the response is a stream already (as
// finish writes it), else a JSON body. A response that is not the call's
// to write any more gives a writer that holds the result (hold).
func (p *PassThrough) begin() (*passWriter, error) {
	if p.before != nil {
		p.before()
	}
	if p.gate != nil && !p.gate() {
		return &passWriter{hold: true}, nil
	}
	s := p.s
	s.closed.Store(true)
	s.open.Do(func() {})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered || s.finished || s.reqCtx.Err() != nil {
		return &passWriter{hold: true}, nil
	}
	id, err := json.Marshal(s.id)
	if err != nil {
		return nil, err
	}
	s.answered = true
	if s.events != nil {
		s.writeBuffered()
		close(s.done)
	}
	w := &passWriter{s: s, self: p.self, sse: s.flusher != nil && (s.upgraded || s.notified.Load())}
	if w.sse {
		if !s.upgraded {
			s.upgrade()
		}
	} else {
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
	}
	b := (*passPool.Get().(*[]byte))[:0]
	if w.sse {
		b = append(b, eventHead...)
	}
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	w.out = b
	return w, nil
}

// result copies the result object from src, the held members last.
func (w *passWriter) result(src *jsonSource, v *valueScan) (*RawResult, error) {
	src.i++ // '{', seen by Relay
	start := w.written + len(w.out)
	w.out = append(w.out, '{')
	var meta, resultType, isError []byte
	n := 0
	if c, err := src.peek(); err != nil {
		return nil, err
	} else if c == '}' {
		src.i++
	} else {
		for {
			raw, key, err := src.key(v)
			if err == nil {
				err = src.take(':')
			}
			if err != nil {
				return nil, err
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
					return nil, fmt.Errorf("member %s: %w", raw, err)
				}
			} else {
				if n > 0 {
					w.out = append(w.out, ',')
				}
				w.out = append(append(w.out, raw...), ':')
				if err := src.value(v, &w.out, w.flush, 0); err != nil {
					return nil, fmt.Errorf("member %s: %w", raw, err)
				}
				n++
			}
			c, err := src.peek()
			if err != nil {
				return nil, err
			}
			src.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return nil, v.syntax(c, "after object key:value pair")
			}
		}
	}
	res := &RawResult{Passed: !w.hold}
	if err := json.Unmarshal(orNull(isError), &res.IsError); err != nil {
		return nil, fmt.Errorf("isError: %w", err)
	}
	if err := json.Unmarshal(orNull(resultType), &res.ResultType); err != nil {
		return nil, fmt.Errorf("resultType: %w", err)
	}
	if meta != nil && string(meta) != "null" {
		res.Meta = json.RawMessage(meta)
	}
	if !w.hold && w.s.modern {
		var err error
		if meta, resultType, err = decorateMembers(meta, res.ResultType, w.self); err != nil {
			return nil, err
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
	return res, nil
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
	if w.s.reqCtx.Err() != nil {
		return fmt.Errorf("the caller has gone away: %w", context.Cause(w.s.reqCtx))
	}
	if _, err := w.s.w.Write(w.out); err != nil {
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

// fail is err, after the answer began: the response is marked to be
// aborted (Stream.finish). Before it began (w nil), err as it is.
func (w *passWriter) fail(err error) error {
	if w == nil || w.hold {
		return err
	}
	w.s.mu.Lock()
	w.s.broken = true
	w.s.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrAnswerBroken, err)
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
