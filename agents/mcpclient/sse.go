package mcpclient

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// sseCursor is what resuming a stream needs: the id of the last event and
// the reconnection time the server asked for.
type sseCursor struct {
	lastID string
	retry  time.Duration
}

// sseEvents reads a downstream's SSE stream event by event: the fields MCP
// uses (data, id, retry), lines read with a bufio.Scanner and bounded, as
// each event's data, by limit (Options.MaxMessageBytes). Event ids and retry times go to
// the cursor.
type sseEvents struct {
	sc    *bufio.Scanner
	cur   *sseCursor
	data  []byte
	limit int
}

func newSSEEvents(body io.Reader, cur *sseCursor, limit int) *sseEvents {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, limit)
	return &sseEvents{sc: sc, cur: cur, limit: limit}
}

// next returns the data of the next event that has data, valid until the
// following call; io.EOF at the end of the stream. An event the stream
// ended in the middle of is returned, its id not kept (as mcp-go does).
func (e *sseEvents) next() ([]byte, error) {
	e.data = e.data[:0]
	var id string
	hasID, hasData := false, false
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 { // end of an event
			if hasID {
				e.cur.lastID, hasID = id, false
			}
			if hasData {
				return e.data, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				e.data = append(e.data, '\n')
			}
			if e.data, hasData = append(e.data, value...), true; len(e.data) > e.limit {
				return nil, &tooLargeError{limit: e.limit}
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id, hasID = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				e.cur.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	switch err := e.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, &tooLargeError{limit: e.limit}
	case err != nil:
		return nil, err
	case hasData:
		return e.data, nil
	}
	return nil, io.EOF
}
