package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// testLimit is the bound on one message in these tests (4 KiB: the
// default, 64 MiB, behaves the same and costs the machine 64 MiB a case).
const testLimit = 4 << 10

func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string // each event's data
		lastID string
		retry  time.Duration
		err    error // after the events
	}{
		{"one event", "event: message\ndata: {\"a\":1}\n\n", []string{`{"a":1}`}, "", -1, io.EOF},
		{"CRLF, comments, no space after the colon", ": hi\r\ndata:x\r\n\r\n", []string{"x"}, "", -1, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\ndata: c\n\n", []string{"a\nb", "c"}, "", -1, io.EOF},
		{"id and retry", "id: 7\nretry: 250\ndata: x\n\nid: 8\n\n", []string{"x"}, "8", 250 * time.Millisecond, io.EOF},
		{"an id with NUL is ignored", "id: 1\n\nid: a\x00b\ndata: x\n\n", []string{"x"}, "1", -1, io.EOF},
		{"unfinished last event, its id not kept", "data: x\n\nid: 9\ndata: y\n", []string{"x", "y"}, "", -1, io.EOF},
		{"no events", "\n\n: ping\n\n", nil, "", -1, io.EOF},
		{"line too long", "data: " + strings.Repeat("x", testLimit) + "\n\n", nil, "", -1, ErrEventTooLarge},
		{"data too long", strings.Repeat("data: "+strings.Repeat("x", 1<<10)+"\n", 5) + "\n", nil, "", -1, ErrEventTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := Cursor{Retry: -1}
			events := NewEventReader(strings.NewReader(tt.stream), &cur, testLimit)
			var got []string
			var err error
			for {
				var data []byte
				if data, err = events.Next(); err != nil {
					break
				}
				got = append(got, string(data))
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("events %q, want %q", got, tt.want)
			}
			if cur.LastID != tt.lastID || cur.Retry != tt.retry {
				t.Errorf("cursor %q %v, want %q %v", cur.LastID, cur.Retry, tt.lastID, tt.retry)
			}
		})
	}
}
