package wire

// The one SSE reader of the gateway: a downstream's response stream (the
// raw tools/call's, ClientCall). Gap: mcp-go's
// client reads SSE inside its transport (readSSE) and exports no reader.
// Retired by: an exported mcp-go event reader with a bound per event.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// ErrEventTooLarge: an SSE line or an event's data passed the reader's
// limit.
var ErrEventTooLarge = errors.New("SSE event larger than the limit")

// Cursor is what resuming a stream needs: the id of the last event and the
// reconnection time the server asked for (Retry < 0: none).
type Cursor struct {
	LastID string
	Retry  time.Duration
}

// EventReader reads an SSE stream event by event: the fields MCP uses
// (data, id, retry), lines read with a bufio.Scanner and bounded, as each
// event's data, by a limit. Event ids and retry times go to the cursor.
type EventReader struct {
	sc    *bufio.Scanner
	cur   *Cursor
	data  []byte
	limit int
}

// NewEventReader reads body, keeping ids and retry times in cur.
func NewEventReader(body io.Reader, cur *Cursor, limit int) *EventReader {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, limit)
	return &EventReader{sc: sc, cur: cur, limit: limit}
}

// Next returns the data of the next event that has data, valid until the
// following call; io.EOF at the end of the stream, ErrEventTooLarge past
// the limit. An event the stream ended in the middle of is returned, its
// id not kept (as mcp-go does).
func (e *EventReader) Next() ([]byte, error) {
	e.data = e.data[:0]
	var id string
	hasID, hasData := false, false
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 { // end of an event
			if hasID {
				e.cur.LastID, hasID = id, false
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
				return nil, ErrEventTooLarge
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id, hasID = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				e.cur.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	switch err := e.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, ErrEventTooLarge
	case err != nil:
		return nil, err
	case hasData:
		return e.data, nil
	}
	return nil, io.EOF
}
