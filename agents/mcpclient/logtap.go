package mcpclient

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// tapResponse wraps the body of resp when it is the SSE response stream of a
// request whose context carries a call tag (see Relay), so that the call's
// log messages can be routed to it.
func tapResponse(req *http.Request, resp *http.Response) {
	tag, ok := req.Context().Value(callTagKey{}).(string)
	if !ok || resp.Body == nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	resp.Body = newLogTap(resp.Body, tag)
}

// logTapBuffer bounds the SSE lines logTap looks into; a longer line passes
// unchanged (and an untagged log message goes to Options.OnLogMessage).
const logTapBuffer = 64 << 10

// logTap passes an SSE body through unchanged except for the data lines of
// notifications/message events, whose params get the call tag. MCP servers
// write one JSON message per data line; anything else passes as it came.
// Event ids and order are kept.
type logTap struct {
	body  io.ReadCloser
	r     *bufio.Reader
	tag   json.RawMessage
	out   []byte // processed bytes the reader has not taken yet
	mid   bool   // inside a line longer than the buffer
	err   error
	dataP []byte
}

var (
	dataField = []byte("data:")
	logMethod = []byte(`"notifications/message"`)
)

func newLogTap(body io.ReadCloser, tag string) *logTap {
	t, _ := json.Marshal(tag)
	return &logTap{body: body, r: bufio.NewReaderSize(body, logTapBuffer), tag: t}
}

func (t *logTap) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		line, err := t.r.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			t.out, t.mid = line, true
			continue
		case err != nil:
			t.err = err
		}
		start := !t.mid
		t.mid = false
		if start && bytes.HasPrefix(line, dataField) && bytes.Contains(line, logMethod) {
			if tagged, ok := t.tagLine(line); ok {
				line = tagged
			}
		}
		t.out = line
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// tagLine returns a data line whose message is a notifications/message with
// the call tag added to its params.
func (t *logTap) tagLine(line []byte) ([]byte, bool) {
	payload := bytes.TrimPrefix(line, dataField)
	end := bytes.TrimRight(payload, "\r\n")
	eol := payload[len(end):]
	var msg map[string]json.RawMessage
	if json.Unmarshal(end, &msg) != nil || string(msg["method"]) != string(logMethod) || msg["id"] != nil {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if raw, ok := msg["params"]; ok && json.Unmarshal(raw, &params) != nil {
		return nil, false
	}
	params[callTag] = t.tag
	var err error
	if msg["params"], err = json.Marshal(params); err != nil {
		return nil, false
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, false
	}
	out := append(append(append(t.dataP[:0], "data: "...), b...), eol...)
	t.dataP = out
	return out, true
}

func (t *logTap) Close() error { return t.body.Close() }
