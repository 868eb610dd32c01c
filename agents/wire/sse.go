package wire

import "bytes"

// The one SSE writer of the gateway's MCP responses, and the one reading
// of it: an event is "event: message\ndata: <one JSON-RPC message>\n\n",
// written in one Write, as mcp-go v1.2.1 writes its own (handlePost) and as
// Stream writes a fast call's. Gap: mcp-go exports no event writer, and a
// server-to-client request of the endpoint's own (elicitation, sampling,
// roots on a call's stream) must be framed as mcp-go frames its events.
// Retired by: an mcp-go API to send a request on a call's response stream.

var (
	eventHead = []byte("event: message\ndata: ")
	eventTail = []byte("\n\n")
	eventTag  = []byte("event: ")
)

// AppendEvent appends data, one JSON-RPC message on one line, to dst as
// one SSE message event.
func AppendEvent(dst, data []byte) []byte {
	if cap(dst)-len(dst) < len(eventHead)+len(data)+len(eventTail) {
		grown := make([]byte, len(dst), len(dst)+len(eventHead)+len(data)+len(eventTail))
		copy(grown, dst)
		dst = grown
	}
	return append(append(append(dst, eventHead...), data...), eventTail...)
}

// EventData is the message of p when p is exactly one message event whose
// data is one line, as AppendEvent and mcp-go write them.
func EventData(p []byte) ([]byte, bool) {
	data, ok := bytes.CutPrefix(p, eventHead)
	if !ok || !bytes.HasSuffix(data, eventTail) {
		return nil, false
	}
	msg := data[:len(data)-len(eventTail)]
	if bytes.IndexByte(msg, '\n') >= 0 {
		return nil, false
	}
	return msg, true
}

// IsEvent reports a write that starts an SSE event (of any type).
func IsEvent(p []byte) bool { return bytes.HasPrefix(p, eventTag) }
