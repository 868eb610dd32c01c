package llm

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// readStream reads body as the provider kind's stream.
func readStream(kind string, body io.Reader) (*Response, error) {
	if kind == "anthropic" {
		return readAnthropicStream(sseResp(body), nil)
	}
	return readOpenAIStream(sseResp(body), nil)
}

// A stream whose last event has no blank line after it: the decoders drop
// that event (the SSE rules: an event the stream ends inside is not
// dispatched), so the answer stands only if its finish reason came before.
func TestFinalEventWithoutBlankLine(t *testing.T) {
	const (
		oaText   = `{"choices":[{"delta":{"content":"hi"}}]}`
		oaFinish = `{"choices":[{"delta":{},"finish_reason":"stop"}]}`
		anStart  = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"hi"}}`
		anDelta  = `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`
		anStop   = `{"type":"message_stop"}`
	)
	tests := []struct {
		name, kind, body string
		wantErr          error
	}{
		{"openai [DONE] without blank line", "openai", sse(oaText, oaFinish) + "data: [DONE]\n", nil},
		{"openai [DONE] without line end", "openai", sse(oaText, oaFinish) + "data: [DONE]", nil},
		{"openai finish_reason without blank line", "openai", sse(oaText) + "data: " + oaFinish + "\n", errNoFinish},
		{"openai finish_reason without line end", "openai", sse(oaText) + "data: " + oaFinish, errNoFinish},
		{"anthropic message_stop without blank line", "anthropic", anSSE(anStart, anDelta) + "event: message_stop\ndata: " + anStop + "\n", nil},
		{"anthropic stop_reason without blank line", "anthropic", anSSE(anStart) + "event: message_delta\ndata: " + anDelta, errNoStopReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := readStream(tc.kind, strings.NewReader(tc.body))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || resp.Text != "hi" || resp.FinishReason != "stop" {
				t.Fatalf("resp = %+v, err = %v; want text hi, finish stop", resp, err)
			}
		})
	}
}

// The answer does not depend on how the stream is cut into reads: a CRLF
// split across reads, a line longer than the decoder's first buffer.
func TestStreamCutIntoReads(t *testing.T) {
	long := strings.Repeat("y", 9000)
	oa := strings.ReplaceAll(sse(`{"choices":[{"delta":{"content":"`+long+`"}}]}`,
		`{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}]}`, "[DONE]"), "\n", "\r\n")
	an := strings.ReplaceAll(anSSE(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"`+long+`"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`, `{"type":"message_stop"}`), "\n", "\r\n")
	for kind, body := range map[string]string{"openai": oa, "anthropic": an} {
		for name, r := range map[string]io.Reader{
			"whole":    strings.NewReader(body),
			"one byte": iotest.OneByteReader(strings.NewReader(body)),
			"halves":   iotest.HalfReader(strings.NewReader(body)),
		} {
			resp, err := readStream(kind, r)
			if err != nil || resp.Text != long+"!" || resp.FinishReason != "stop" {
				t.Fatalf("%s, %s: err = %v, resp = %.80v", kind, name, err, resp)
			}
		}
	}
}

// A read error mid-stream fails the call, named as a stream read.
func TestStreamReadError(t *testing.T) {
	body := io.MultiReader(strings.NewReader(sse(`{"choices":[{"delta":{"content":"par"}}]}`)), iotest.ErrReader(io.ErrUnexpectedEOF))
	_, err := readOpenAIStream(sseResp(body), nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "reading stream") {
		t.Fatalf("err = %v, want reading stream: unexpected EOF", err)
	}
}

// A stream longer than its bound fails instead of growing without end; a
// missing body reads as an empty stream.
func TestStreamBound(t *testing.T) {
	endless := strings.NewReader("data: " + strings.Repeat("x", 1000))
	resp := sseResp(&boundedBody{ReadCloser: io.NopCloser(endless), left: 100})
	if _, err := readOpenAIStream(resp, nil); !errors.Is(err, errStreamTooLong) {
		t.Fatalf("err = %v, want %v", err, errStreamTooLong)
	}
	if _, err := readAnthropicStream(&http.Response{StatusCode: http.StatusOK}, nil); !errors.Is(err, errNoStopReason) {
		t.Fatalf("no body: err = %v, want %v", err, errNoStopReason)
	}
}
