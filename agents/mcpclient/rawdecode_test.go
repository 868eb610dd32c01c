package mcpclient

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pallasgw/pallasgw/agents/internal/jsonmember"
)

var rawMessageSeeds = []string{
	`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
	` {"ID":"a\u0062","METHOD":"x\"y","Result":null,"error":null} `,
	`{"method":5}`,
	`{"error":{"code":1},"error":{"message":"m"}}`,
	`{"error":"no","id":null,"method":null}`,
	`{"method":"a","method":null}`,
	`[1]`, `null`, `{"id":`, `"s"`,
}

// FuzzDecodeRawMessage holds decodeRawMessage to json.Unmarshal.
func FuzzDecodeRawMessage(f *testing.F) {
	for _, s := range rawMessageSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want rawMessage
		gotErr, wantErr := decodeRawMessage([]byte(s), &got), json.Unmarshal([]byte(s), &want)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: error %v, want %v", s, gotErr, wantErr)
		}
		if g, w := rawMessageString(&got), rawMessageString(&want); gotErr == nil && g != w {
			t.Fatalf("%s:\n got %s\nwant %s", s, g, w)
		}
	})
}

func rawMessageString(m *rawMessage) string {
	e := "<nil>"
	if m.Error != nil {
		b, _ := json.Marshal(m.Error)
		e = string(b)
	}
	return fmt.Sprintf("id %q method %q result %q error %s", m.ID, m.Method, m.Result, e)
}

// FuzzPeekResult holds readPeek to json.Unmarshal: when it reads an object
// it reads what encoding/json reads, without error.
func FuzzPeekResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[],"isError":true,"resultType":"input_required","_meta":{"a":1}}`,
		`{"ISERROR":true,"isError":null,"resulttype":"c\u006fmplete","_META":null}`,
		`{"isError":"yes"}`, `{"resultType":1}`, `{"isError":true,"isError":false}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsonmember.IsObject([]byte(s)) || !json.Valid([]byte(s)) {
			return
		}
		var want struct {
			IsError    bool            `json:"isError"`
			ResultType string          `json:"resultType"`
			Meta       json.RawMessage `json:"_meta"`
		}
		wantErr := json.Unmarshal([]byte(s), &want)
		var isError bool
		var resultType string
		var meta json.RawMessage
		if !readPeek([]byte(s), &isError, &resultType, &meta) {
			return
		}
		if wantErr != nil {
			t.Fatalf("%s: read, where encoding/json says %v", s, wantErr)
		}
		if isError != want.IsError || resultType != want.ResultType || string(meta) != string(want.Meta) {
			t.Fatalf("%s: %v %q %s, want %v %q %s", s, isError, resultType, meta, want.IsError, want.ResultType, want.Meta)
		}
	})
}
