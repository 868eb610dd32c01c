package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// parseSeeds are messages of the shapes parseFast reads and of those it
// leaves to encoding/json.
var parseSeeds = []string{
	string(benchCall),
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":null}]}}}`,
	`{"JSONRPC":"2.0","Id":1,"METHOD":"initialize","params":{"capabilities":{"Elicitation":{},"roots":{"listChanged":true}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":5}}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":null,"level":"info"}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}`,
	`{"jsonrpc":"2.0","\u0069d":1,"method":"x"}`,
	`{"jsonrpc":"2.0","ſd":1,"method":"x"}`,
	` {"jsonrpc":"2.0","id":null,"method":"x\ud800","params":[1]} `,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"k":"v","k":"w"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{}}} {}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":"a\u00e9\"b"}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
	`{"jsonrpc":"2.0","result":{"a":1},"error":null}`,
	`[1]`, `{`, `{"a":}`, `"x"`, ``, `{"a":1,}`, `{"a" 1}`,
}

// FuzzParse checks that Parse (jsontext where it reads a message) accepts,
// reads and refuses what encoding/json's decode (parseSlow) does, with the
// same error, and that Meta, MetaString and ToolName read the same.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := parseFast(body), error(nil)
		if got == nil {
			got, gotErr = parseSlow(body)
		}
		want, wantErr := parseSlow(body)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: error %v, encoding/json %v", body, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		gotMeta, gotOK := got.Meta()
		wantMeta, wantOK := want.Meta()
		if gotOK != wantOK || !reflect.DeepEqual(rawMap(gotMeta), rawMap(wantMeta)) {
			t.Fatalf("%q: _meta %v %q, encoding/json %v %q", body, gotOK, gotMeta, wantOK, wantMeta)
		}
		for _, k := range []string{"progressToken", "io.modelcontextprotocol/protocolVersion"} {
			if g, w := got.MetaString(k), want.MetaString(k); g != w {
				t.Fatalf("%q: MetaString(%s) %q, encoding/json %q", body, k, g, w)
			}
		}
		gn, gok := got.Params.ToolName()
		wn, wok := want.Params.ToolName()
		if gn != wn || gok != wok {
			t.Fatalf("%q: name %q %v, encoding/json %q %v", body, gn, gok, wn, wok)
		}
		// compare the exported members and what is derived from them
		got.meta, want.meta = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// rawMap makes a nil map and an empty one differ, and compares values
// as bytes.
func rawMap(m map[string]json.RawMessage) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// answerSeeds are downstream answers of the shapes readFast and peekFast
// read and of those they leave to encoding/json.
var answerSeeds = []string{
	string(benchAnswer),
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"content":[],"isError":true,"_meta":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"isError":null,"resultType":null,"_meta":null}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"isError":1}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"resultType":5}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"resultType":"a","resultType":"b"}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"IsError":true,"ResultType":"input_required"}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{"\u0069sError":true}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":[1]}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":null}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","error":{"code":-32000,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","id":"pgw-\u0031f","result":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
	`{"jsonrpc":"2.0","method":5,"id":"pgw-1f","result":{}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","id":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{}} x`,
	`{"jsonrpc":"2.0","id":"pgw-1f","result":{}`, `[]`, `null`, ``,
}

// FuzzDecodeAnswer checks that the wire client's decode of an answer
// (jsontext where it reads one) returns what encoding/json's decode
// (decodeAnswerSlow) returns: the same result members, or the same error.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	c := &ClientCall{ID: "pgw-1f"}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gotErr := c.decodeAnswer(b)
		want, wantErr := c.decodeAnswerSlow(b)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && (gotErr.Error() != wantErr.Error() || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr)) {
			t.Fatalf("%q: error %v, encoding/json %v", b, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if string(got.JSON) != string(want.JSON) || got.IsError != want.IsError || got.ResultType != want.ResultType || string(got.Meta) != string(want.Meta) {
			t.Fatalf("%q:\n got %+v\nwant %+v", b, got, want)
		}
	})
}

// decodeAnswerSlow is decodeAnswer with encoding/json, as it was before readFast.
func (c *ClientCall) decodeAnswerSlow(b []byte) (*RawResult, error) {
	var msg clientMessage
	if err := json.Unmarshal(b, &msg); err != nil {
		return nil, &AnswerError{transport.NewError(fmt.Errorf("failed to decode response: %w", err))}
	}
	var id string // answers, as it was
	if msg.Method != "" || json.Unmarshal(msg.ID, &id) != nil || id != c.ID {
		return nil, &AnswerError{transport.NewError(fmt.Errorf("malformed response: not the answer to request %s: %.80s", c.ID, b))}
	}
	if msg.Error != nil {
		return nil, &ErrorAnswer{Details: *msg.Error}
	}
	res, err := peekResultSlow(msg.Result)
	if err != nil {
		return nil, &AnswerError{transport.NewError(err)}
	}
	return res, nil
}

// peekResultSlow is PeekResult as it was before peekFast.
func peekResultSlow(raw json.RawMessage) (*RawResult, error) {
	var peek struct {
		IsError    bool            `json:"isError"`
		ResultType string          `json:"resultType"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ErrNoResult
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("malformed response: the result is not an object: %.40s", raw)
	}
	if err := json.Unmarshal(raw, &peek); err != nil {
		return nil, fmt.Errorf("malformed response: the result: %w", err)
	}
	if string(peek.Meta) == "null" {
		peek.Meta = nil
	}
	return &RawResult{JSON: raw, IsError: peek.IsError, ResultType: peek.ResultType, Meta: peek.Meta}, nil
}
