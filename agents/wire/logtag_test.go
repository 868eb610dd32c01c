package wire

import (
	"io"
	"strings"
	"testing"
)

func TestLogTagger(t *testing.T) {
	long := strings.Repeat("x", logTagBuffer+10)
	for _, c := range []struct{ name, in, want string }{
		{"log message tagged",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"d\"}}\n\n",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"d\",\"io.pallasgw/call\":\"c1\",\"level\":\"info\"}}\n\n"},
		{"CRLF and no params",
			"id: 4\r\ndata:{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\n\r\n",
			"id: 4\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"io.pallasgw/call\":\"c1\"}}\r\n\r\n"},
		{"progress unchanged",
			"data: {\"method\":\"notifications/progress\",\"params\":{\"message\":\"notifications/message\"}}\n\n",
			"data: {\"method\":\"notifications/progress\",\"params\":{\"message\":\"notifications/message\"}}\n\n"},
		{"a request with that method unchanged",
			"data: {\"id\":1,\"method\":\"notifications/message\"}\n",
			"data: {\"id\":1,\"method\":\"notifications/message\"}\n"},
		{"long line unchanged",
			"data: {\"method\":\"notifications/message\",\"params\":{\"data\":\"" + long + "\"}}\ndata: {\"method\":\"notifications/message\"}",
			"data: {\"method\":\"notifications/message\",\"params\":{\"data\":\"" + long + "\"}}\ndata: {\"method\":\"notifications/message\",\"params\":{\"io.pallasgw/call\":\"c1\"}}"},
		{"broken JSON unchanged", "data: {\"method\":\"notifications/message\"\n", "data: {\"method\":\"notifications/message\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := io.ReadAll(iotestHalfReader{NewLogTagger(io.NopCloser(strings.NewReader(c.in)), "io.pallasgw/call", "c1")})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// iotestHalfReader reads at most 7 bytes at a time, to exercise partial
// reads of the tap's output.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return h.r.Read(p)
}
