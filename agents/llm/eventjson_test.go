package llm

import (
	"strings"
	"testing"
)

// TestEventJSON checks that one decoder for a stream's events reads each
// event as json.Unmarshal would: each value alone, an event with more
// than one value or a cut one refused (and the next event still read).
func TestEventJSON(t *testing.T) {
	var e eventJSON
	type ev struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	steps := []struct {
		data    string
		want    ev
		wantErr string
	}{
		{data: `{"n":1,"s":"a"}`, want: ev{1, "a"}},
		{data: "  {\"n\":2}\n", want: ev{N: 2}},
		{data: `{"n":3}{"n":4}`, wantErr: "after top-level value"},
		{data: `{"n":5}`, want: ev{N: 5}},
		{data: `{"n":`, wantErr: "unexpected end of JSON input"},
		{data: `{"n":6,"s":"` + strings.Repeat("x", 10000) + `"}`, want: ev{6, strings.Repeat("x", 10000)}},
		{data: `{"n":"seven"}`, wantErr: "cannot unmarshal string"},
		{data: `{"n":8}`, want: ev{N: 8}},
		{data: `nope`, wantErr: "invalid character"},
		{data: `{"n":9}`, want: ev{N: 9}},
	}
	for i, st := range steps {
		var got ev
		err := e.decode([]byte(st.data), &got)
		switch {
		case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("step %d (%.20q): error %v, want %q", i, st.data, err, st.wantErr)
		case st.wantErr == "" && err != nil:
			t.Errorf("step %d (%.20q): %v", i, st.data, err)
		case st.wantErr == "" && got != st.want:
			t.Errorf("step %d (%.20q): got %+v, want %+v", i, st.data, got, st.want)
		}
	}
}
