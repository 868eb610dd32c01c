package wire

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mark3labs/mcp-go/mcp"
)

// passStream is a fast call's response for request id 7, and the call's
// pass-through.
func passStream(t *testing.T, modern bool) (*Stream, *httptest.ResponseRecorder, *PassThrough) {
	t.Helper()
	s, rec, c := passCall(modern)
	pt := c.PassThrough(SelfJSON(testSelf), nil)
	if pt == nil {
		t.Fatal("no pass-through on a fast call")
	}
	return s, rec, pt
}

// passCall is a fast call whose response is for request id 7.
func passCall(modern bool) (*Stream, *httptest.ResponseRecorder, *Call) {
	rec := httptest.NewRecorder()
	s := newStream(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	s.modern, s.id = modern, 7
	return s, rec, &Call{Modern: modern, stream: s}
}

// decoded is a JSON text as Go values, for comparing two texts whatever
// their member order and spacing.
func decoded(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, b)
	}
	return v
}

// A passed-through answer is the answer the held path writes (RawResponse),
// but for member order and spacing, for callers of either protocol, and
// the facts returned are peekResult's.
func TestRelayAsHeld(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\\n\\u00e9", 3000)
	for _, result := range []string{
		`{"content":[{"type":"text","text":"` + big + `"}]}`,
		"{\n  \"content\": [ {\"type\": \"text\", \"text\": \"a\"} ],\n  \"isError\": true,\n  \"structuredContent\": {\"n\": [1, 2.5e3, -0, null, false]}\n}",
		`{"content":[],"_meta":{"k":"v"},"resultType":"complete"}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"other"}},"content":[]}`,
		`{"_meta":null,"content":[],"isError":null}`,
		`{}`,
	} {
		for _, modern := range []bool{false, true} {
			s, rec, pt := passStream(t, modern)
			body := `{"jsonrpc":"2.0","id":"pgw-call-1","result":` + result + "}\n"
			res, msg, err := pt.Relay(iotest.HalfReader(strings.NewReader(body)), "pgw-call-1", 1<<30)
			if err != nil || msg != nil {
				t.Fatalf("%.60s: Relay: %v, msg %q", result, err, msg)
			}
			s.finish(nil)
			peek, err := peekResult(json.RawMessage(result))
			if err != nil {
				t.Fatal(err)
			}
			held, ok := RawResponse(7, peek, modern, SelfJSON(testSelf))
			if !ok {
				t.Fatalf("%.60s: the held path declines it", result)
			}
			if got, want := decoded(t, rec.Body.Bytes()), decoded(t, held); !reflect.DeepEqual(got, want) {
				t.Errorf("%.60s (modern %v):\n got %.300s\nwant %.300s", result, modern, rec.Body.Bytes(), held)
			}
			if !strings.HasSuffix(rec.Body.String(), "}\n") || strings.Count(rec.Body.String(), "\n") != 1 {
				t.Errorf("%.60s: not one compact line: %.100q", result, rec.Body.String())
			}
			if !res.Passed || res.IsError != peek.IsError || res.ResultType != peek.ResultType || string(res.Meta) != string(peek.Meta) {
				t.Errorf("%.60s: facts %+v, want %+v", result, res, peek)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		}
	}
}

// After a notification the answer is the stream's last event, on one line.
func TestRelayOnStream(t *testing.T) {
	s, rec, pt := passStream(t, false)
	if err := s.Notify("notifications/progress", map[string]any{"progress": 1}); err != nil {
		t.Fatal(err)
	}
	body := "{\"id\":\"pgw-call-2\",\"jsonrpc\":\"2.0\",\"result\":{\"content\":\n[{\"type\":\"text\",\"text\":\"x\"}]}}"
	if _, _, err := pt.Relay(strings.NewReader(body), "pgw-call-2", 1<<20); err != nil {
		t.Fatal(err)
	}
	s.finish(nil)
	events := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n\n"), "\n\n")
	if len(events) != 2 || !strings.Contains(events[0], "notifications/progress") {
		t.Fatalf("events %q", events)
	}
	data, ok := EventData([]byte(events[1] + "\n\n"))
	if !ok {
		t.Fatalf("last event %q", events[1])
	}
	want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`
	if string(data) != want {
		t.Errorf("answer %s, want %s", data, want)
	}
}

// What Relay refuses before the answer began is an error and nothing is
// written; an answer without a result comes back whole to be read as any.
func TestRelayBeforeAnswer(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":"other","result":{}}`, "not the answer to request pgw-call-1"},
		{`{"jsonrpc":"2.0","method":"ping","result":{}}`, "a request where the answer was expected"},
		{`{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"result":{}}`, "both an error and a result"},
		{`{"jsonrpc":"2.0","id":"pgw-call-1","result":[1]}`, "the result is not an object"},
		{`[]`, "invalid character '['"},
		{`{"jsonrpc":"2.0","id":"pgw-call-1"`, "unexpected end of JSON input"},
	} {
		s, rec, pt := passStream(t, false)
		_, _, err := pt.Relay(strings.NewReader(c.body), "pgw-call-1", 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrAnswerBroken) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
		s.finish(mustJSONRPCError())
		if !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("%s: the call's own answer was not written: %q", c.body, rec.Body.String())
		}
	}
	_, _, pt := passStream(t, false)
	errAnswer := `{"jsonrpc":"2.0","id":"pgw-call-1","error":{"code":-32602,"message":"no"}}`
	_, msg, err := pt.Relay(strings.NewReader(errAnswer), "pgw-call-1", 1<<20)
	if err != nil || !reflect.DeepEqual(decoded(t, msg), decoded(t, []byte(errAnswer))) {
		t.Errorf("error answer: %v, %s", err, msg)
	}
}

func mustJSONRPCError() any {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(7), Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "failed", nil)}
}

var testSelf = mcp.Implementation{Name: "gw", Version: "1.0.0"}

// peekResult is the facts of a held result (agents/mcpclient reads them so).
func peekResult(raw json.RawMessage) (*RawResult, error) {
	var peek struct {
		IsError    bool            `json:"isError"`
		ResultType string          `json:"resultType"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &peek); err != nil {
		return nil, err
	}
	if string(peek.Meta) == "null" {
		peek.Meta = nil
	}
	return &RawResult{JSON: raw, IsError: peek.IsError, ResultType: peek.ResultType, Meta: peek.Meta}, nil
}

// An answer that breaks after it began aborts the caller's response: its
// client sees a failed response, not a short one.
func TestRelayBroken(t *testing.T) {
	for _, c := range []struct {
		name string
		body io.Reader
	}{
		{"invalid", strings.NewReader(`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"content":[tru]}}`)},
		{"cut", io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"content":[`), iotest.ErrReader(io.ErrUnexpectedEOF))},
		{"too large", iotest.OneByteReader(strings.NewReader(`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"content":"` + strings.Repeat("x", 2000) + `"}}`))},
		{"isError not a bool", strings.NewReader(`{"jsonrpc":"2.0","id":"pgw-call-1","result":{"isError":"yes"}}`)},
		{"id after the result", strings.NewReader(`{"jsonrpc":"2.0","result":{},"id":"other"}`)},
	} {
		s, _, pt := passStream(t, false)
		_, _, err := pt.Relay(c.body, "pgw-call-1", 1000)
		if !errors.Is(err, ErrAnswerBroken) {
			t.Errorf("%s: error %v, want ErrAnswerBroken", c.name, err)
		}
		func() {
			defer func() {
				if p := recover(); p != http.ErrAbortHandler {
					t.Errorf("%s: finish: panic %v, want http.ErrAbortHandler", c.name, p)
				}
			}()
			s.finish(nil)
		}()
	}
}

// Off, or outside a fast call, nothing is passed through; a closed gate
// or an answered call holds the result.
func TestPassThroughOff(t *testing.T) {
	if (&Call{}).PassThrough(nil, nil) != nil || (*Call)(nil).PassThrough(nil, nil) != nil {
		t.Error("a pass-through without a fast call")
	}
	func() {
		defer SetFast(true)
		SetFast(false)
		if (&Call{stream: &Stream{}}).PassThrough(nil, nil) != nil {
			t.Error("a pass-through with the switch off")
		}
	}()
	body := `{"jsonrpc":"2.0","id":"c","result":{"isError":true, "content":[]}}`
	for _, c := range []struct {
		name  string
		setup func(s *Stream, c *Call) *Call
	}{
		{"gate closed", func(_ *Stream, c *Call) *Call {
			return c.Gated(func() bool { return false })
		}},
		{"answered", func(s *Stream, c *Call) *Call { s.finish(mustJSONRPCError()); return c }},
	} {
		s, rec, call := passCall(false)
		pt := c.setup(s, call).PassThrough(SelfJSON(testSelf), nil)
		before := rec.Body.Len()
		res, _, err := pt.Relay(strings.NewReader(body), "c", 1<<20)
		if err != nil || res.Passed || string(res.JSON) != `{"content":[],"isError":true}` || !res.IsError {
			t.Errorf("%s: %+v, %v", c.name, res, err)
		}
		if rec.Body.Len() != before {
			t.Errorf("%s: written: %q", c.name, rec.Body.String())
		}
	}
}
