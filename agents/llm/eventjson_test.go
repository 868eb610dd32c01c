package llm

import (
	"strings"
	"testing"
)

// TestDecodeEvent checks that an event's data is read as one JSON value,
// with encoding/json's leniencies (case, duplicate names, invalid UTF-8),
// and that an event with more than one value, a cut one, a wrong type or
// no JSON at all is refused with an error that says where.
func TestDecodeEvent(t *testing.T) {
	type ev struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	for _, c := range []struct {
		data    string
		want    ev
		wantErr string
	}{
		{data: `{"n":1,"s":"a"}`, want: ev{1, "a"}},
		{data: "  {\"n\":2}\n", want: ev{N: 2}},
		{data: `{"N":3,"S":"b"}`, want: ev{3, "b"}},
		{data: `{"n":4,"n":5}`, want: ev{N: 5}},
		{data: "{\"s\":\"a\xffb\"}", want: ev{S: "a\uFFFDb"}},
		{data: `{"n":6,"s":"` + strings.Repeat("x", 10000) + `"}`, want: ev{6, strings.Repeat("x", 10000)}},
		{data: `{"n":3}{"n":4}`, wantErr: "invalid character '{' after top-level value"},
		{data: `{"n":`, wantErr: "unexpected EOF"},
		{data: `{"n":"seven"}`, wantErr: `unmarshal JSON string into Go int within "/n"`}, // v2 says "cannot" or "unable to", at random
		{data: `nope`, wantErr: "invalid character"},
		{data: ``, wantErr: "unexpected EOF"},
	} {
		var got ev
		err := decodeEvent([]byte(c.data), &got)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%.20q: error %v, want %q", c.data, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("%.20q: %v", c.data, err)
		case c.wantErr == "" && got != c.want:
			t.Errorf("%.20q: got %+v, want %+v", c.data, got, c.want)
		}
	}
}
