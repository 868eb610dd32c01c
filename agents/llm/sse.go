package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// maxEventBytes bounds one SSE event (a whole tool call's arguments can sit
// in one chunk, so this is generous).
const maxEventBytes = 16 << 20

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Event string // "event:" field, "" when absent
	Data  []byte // "data:" lines joined by "\n"
}

// sseReader parses text/event-stream per the WHATWG rules, leniently: CRLF,
// LF and CR line ends; "data:" with or without the space; comment lines
// (": ping") skipped; an event still pending at EOF is dispatched. We parse
// ourselves because openai-go's iterator aborts on chunks such as
// {"error": null} that real servers send.
type sseReader struct {
	r       *bufio.Reader
	buf     []byte // current line, reused
	afterCR bool   // the last line ended in CR: skip a following LF
}

// sseBufs recycles the 4 KiB read buffers of sseReaders: one per model
// response, the biggest allocation of an agent-loop call otherwise.
var sseBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// newSSEReader reads r; release returns its buffer.
func newSSEReader(r io.Reader) *sseReader {
	br := sseBufs.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseReader{r: br} // lines may be longer than the buffer: readLine appends them
}

// release returns the reader's buffer to the pool; s must not be used
// after. Events already returned stay valid (they never share its bytes).
func (s *sseReader) release() {
	if s.r != nil {
		s.r.Reset(nil)
		sseBufs.Put(s.r)
		s.r = nil
	}
}

// Next returns the next event with data, or io.EOF at the end of the stream.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 { // blank line: dispatch
			if hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' { // comment, e.g. ": ping"
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > maxEventBytes {
				return sseEvent{}, fmt.Errorf("sse event larger than %d bytes", maxEventBytes)
			}
			data.Write(value)
			hasData = true
		}
	}
}

// readLine returns one line without its terminator. A line longer than
// maxEventBytes is an error. At EOF a final unterminated line is returned
// first, then io.EOF. It only looks at bytes already buffered, reading more
// only when none are: peeking past them would block on a live stream.
func (s *sseReader) readLine() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if errors.Is(err, io.EOF) && len(s.buf) > 0 {
					s.afterCR = false
					return s.buf, nil
				}
				return nil, err
			}
		}
		chunk, _ := s.r.Peek(s.r.Buffered())
		if s.afterCR {
			s.afterCR = false
			if chunk[0] == '\n' && len(s.buf) == 0 { // second half of CRLF
				s.r.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		line := chunk
		if i >= 0 {
			line = chunk[:i]
		}
		if len(s.buf)+len(line) > maxEventBytes {
			return nil, fmt.Errorf("sse line longer than %d bytes", maxEventBytes)
		}
		s.buf = append(s.buf, line...)
		if i < 0 {
			s.r.Discard(len(chunk))
			continue
		}
		s.afterCR = chunk[i] == '\r'
		s.r.Discard(i + 1)
		return s.buf, nil
	}
}
