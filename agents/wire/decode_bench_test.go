package wire

import (
	"net/http"
	"testing"
)

// benchCall is a 2026-07-28 tools/call as the routing benchmark's load
// engine sends it (test/load).
var benchCall = []byte(`{"id":17,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"pgwload","version":"1.0.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"message":"hello"},"name":"echo"}}`)

// benchAnswer is the downstream's answer to a call (mcp-go's echo).
var benchAnswer = []byte(`{"jsonrpc":"2.0","id":"pgw-1f","result":{"content":[{"type":"text","text":"Echo: hello"}],"resultType":"complete"}}`)

// BenchmarkDecodeCall is the gateway's decoding of a call: the envelope
// (Parse), its check, and the fast path's _meta (decodeMeta).
// With the switch off, encoding/json decodes as before jsontext did.
func BenchmarkDecodeCall(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "fast", false: "off"}[on], func(b *testing.B) {
			SetFast(on)
			defer SetFast(true)
			decodeCalls(b)
		})
	}
}

func decodeCalls(b *testing.B) {
	b.ReportAllocs()
	h := http.Header{}
	for b.Loop() {
		m, err := Parse(benchCall)
		if err != nil || m.Check() != nil {
			b.Fatal(err)
		}
		if _, ok := m.Params.ToolName(); !ok {
			b.Fatal("name")
		}
		meta, ok := decodeMeta(m)
		if !ok {
			b.Fatal("meta")
		}
		if _, ok := protocolOf(h, meta); ok {
			b.Fatal("protocol")
		}
	}
}

// BenchmarkDecodeAnswer is the wire client's decoding of the downstream's
// answer (Do: the message, its id, PeekResult).
func BenchmarkDecodeAnswer(b *testing.B) {
	b.ReportAllocs()
	c := &ClientCall{ID: "pgw-1f"}
	for b.Loop() {
		res, err := c.decodeAnswer(benchAnswer)
		if err != nil || res.ResultType != "complete" {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse compares Parse (jsontext, jsonfast.go) with its
// encoding/json decode (parseSlow) on benchCall.
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct {
		name  string
		parse func([]byte) (*Message, error)
	}{{"jsontext", Parse}, {"encoding-json", parseSlow}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.parse(benchCall); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
