package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
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

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4<<10)} // lines may be longer: readLine copies byte by byte
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
// first, then io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(s.buf) > 0 {
				return s.buf, nil
			}
			return nil, err
		}
		afterCR := s.afterCR
		s.afterCR = false
		switch b {
		case '\n':
			if afterCR && len(s.buf) == 0 {
				continue // second half of CRLF
			}
			return s.buf, nil
		case '\r':
			// Not peeking: that would block on a live stream.
			s.afterCR = true
			return s.buf, nil
		}
		if len(s.buf) >= maxEventBytes {
			return nil, fmt.Errorf("sse line longer than %d bytes", maxEventBytes)
		}
		s.buf = append(s.buf, b)
	}
}
