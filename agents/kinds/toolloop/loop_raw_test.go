package toolloop

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestObjectArguments(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{``, ``, ``},
		{`  `, ``, ``},
		{`null`, ``, ``},
		{` {"b":1,"a":[2]} `, `{"b":1,"a":[2]}`, ``}, // as sent: order kept
		{`{"n":12345678901234567890}`, `{"n":12345678901234567890}`, ``},
		{"{\"s\":\"\xff\"}", `{"s":"` + "\ufffd" + `"}`, ``}, // invalid UTF-8: as encoding/json reads it
		{"\v{}", ``, `invalid character`},                    // not JSON white space
		{`[1]`, ``, `cannot unmarshal array`},
		{`"x"`, ``, `cannot unmarshal string`},
		{`{"a":}`, ``, `invalid character`},
		{`{"a":1} {}`, ``, `invalid character`},
	} {
		got, err := objectArguments(json.RawMessage(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("objectArguments(%q): error %v, want one with %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("objectArguments(%q): %v", tc.in, err)
		case tc.err == "" && string(got) != tc.want:
			t.Errorf("objectArguments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
