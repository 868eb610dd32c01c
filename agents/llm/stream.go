package llm

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The providers' streams are read with their SDKs' event decoders
// (ssestream.NewDecoder of openai-go and of anthropic-sdk-go), not with the
// SDKs' typed iterators (ssestream.Stream aborts on a chunk with
// "error": null, which real servers send) nor their accumulators (see
// openai_stream.go). Each event's data goes to this package's accumulator
// for the provider; the loop below is the one both providers share.
//
// As the SSE rules say, an event the stream ends inside (no blank line
// after it) is not dispatched: the decoders drop it. A stream cut there
// still ends well when its end marker or finish reason came before.

const (
	// maxStreamBytes bounds one streamed answer. The decoders bound a line
	// (32 MiB) but not an event of many lines, nor the answer.
	maxStreamBytes = 256 << 20
	// maxJSONBytes bounds a 2xx answer that is one JSON object instead of
	// a stream.
	maxJSONBytes = 16 << 20
)

// errStreamTooLong ends a stream longer than maxStreamBytes.
var errStreamTooLong = fmt.Errorf("stream longer than %d MiB", maxStreamBytes>>20)

// accumulator folds one provider's stream into one Response.
type accumulator interface {
	// feed takes one event's data (never empty).
	feed(data []byte) error
	// finished reports that the stream's end marker was seen ([DONE],
	// message_stop): nothing after it is read.
	finished() bool
	// result is the answer once the stream ended.
	result() (*Response, error)
}

// eventDecoder is what the loop uses of an SDK's ssestream.Decoder (the
// two SDKs' decoders differ only in their Event types, read by data).
type eventDecoder interface {
	Next() bool
	Err() error
}

// readEvents feeds acc each event's data (data returns the current one)
// until acc is finished or the stream ends, and returns acc's result.
// Errors are not prefixed with the provider name.
func readEvents(dec eventDecoder, data func() []byte, acc accumulator) (*Response, error) {
	for !acc.finished() && dec.Next() {
		d := data()
		if len(bytes.TrimSpace(d)) == 0 { // an event line alone, or empty data lines
			continue
		}
		if err := acc.feed(d); err != nil {
			return nil, err
		}
	}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("reading stream: %w", err)
	}
	return acc.result()
}

// boundStream makes resp's body fail with errStreamTooLong once it has
// given maxStreamBytes; resp is changed in place (it is this call's). A
// missing body reads as empty.
func boundStream(resp *http.Response) *http.Response {
	body := resp.Body
	if body == nil {
		body = http.NoBody
	}
	resp.Body = &boundedBody{ReadCloser: body, left: maxStreamBytes}
	return resp
}

// boundedBody is a body that errs instead of reading past left bytes.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errStreamTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// eventOptions are encoding/json's leniencies, which servers that speak the
// providers' APIs count on: member names matched without regard to case, a
// duplicate name's last value taken, invalid UTF-8 read as U+FFFD.
var eventOptions = json.JoinOptions(
	json.MatchCaseInsensitiveNames(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeEvent decodes one event's data, one JSON value, into v, with
// encoding/json/v2 (github.com/go-json-experiment/json, its mirror until
// Go 1.27, which has it in the standard library): one pass over the value
// where encoding/json scans it twice and decodes by reflection per member,
// about half the CPU of a stream's chunks (test/bench/README.md, agent
// loop). Its errors say where the value went wrong (a JSON pointer and an
// offset).
func decodeEvent(data []byte, v any) error {
	return json.Unmarshal(data, v, eventOptions)
}
