package wire

// The log tagger: a downstream's SSE response stream, as mcp-go's client
// reads it, with the call's tag added to the params of each
// notifications/message (agents/mcpclient's Relay routes a call's log
// messages by it). Gap: mcp-go's client hands every notification to one
// handler per client, without the request whose stream carried it.
// Retired by: a notification handler tied to one request (or the request's
// context handed to the handler).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// logTagBuffer bounds the SSE lines logTagger looks into; a longer line passes
// unchanged (and an untagged log message goes to Options.OnLogMessage).
const logTagBuffer = 64 << 10

// logTagger passes an SSE body through unchanged except for the data lines of
// notifications/message events, whose params get the call tag. MCP servers
// write one JSON message per data line; anything else passes as it came.
// Event ids and order are kept.
type logTagger struct {
	body   io.ReadCloser
	r      *bufio.Reader
	tag    json.RawMessage
	member string
	out    []byte // processed bytes the reader has not taken yet
	mid    bool   // inside a line longer than the buffer
	err    error
	dataP  []byte
}

var (
	dataField = []byte("data:")
	logMethod = []byte(`"notifications/message"`)
)

// NewLogTagger is body with tag added, as the params member named member,
// to every notifications/message it carries.
func NewLogTagger(body io.ReadCloser, member, tag string) io.ReadCloser {
	t, _ := json.Marshal(tag)
	return &logTagger{body: body, r: bufio.NewReaderSize(body, logTagBuffer), tag: t, member: member}
}

func (t *logTagger) Read(p []byte) (int, error) {
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
func (t *logTagger) tagLine(line []byte) ([]byte, bool) {
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
	params[t.member] = t.tag
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

func (t *logTagger) Close() error { return t.body.Close() }
