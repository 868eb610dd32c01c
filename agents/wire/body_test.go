package wire

import (
	"context"
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

// passCall is a fast call whose response is for request id 7.
func passCall(modern bool) (*Stream, *httptest.ResponseRecorder, *Call) {
	rec := httptest.NewRecorder()
	s := newStream(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	s.modern, s.id = modern, 7
	return s, rec, &Call{Modern: modern, stream: s}
}

// streamedResult is body, the answer to request id, opened as a streamed
// result (ClientCall.streamed), or its msg or error; aborted counts the
// aborts of its response.
func streamedResult(body io.Reader, id string, limit int64) (res *RawResult, msg []byte, aborted *int, err error) {
	b, msg, err := openBody(body, id, limit)
	if b == nil {
		return nil, msg, nil, err
	}
	n := 0
	b.abort = func() { n++ }
	return &RawResult{body: b}, nil, &n, nil
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

// A streamed answer is the answer the held path writes (RawResponse), but
// for member order and spacing, for callers of either protocol, and the
// facts it leaves are peekResult's; OnClose's functions run once, after
// the copy, with no error.
func TestBodyAsHeld(t *testing.T) {
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
			s, rec, _ := passCall(modern)
			body := `{"jsonrpc":"2.0","id":"pgw-call-1","result":` + result + "}\n"
			res, msg, _, err := streamedResult(iotest.HalfReader(strings.NewReader(body)), "pgw-call-1", 1<<30)
			if err != nil || msg != nil || !res.Streamed() {
				t.Fatalf("%.60s: openBody: %v, msg %q", result, err, msg)
			}
			closed := 0
			res.OnClose(func(err error) {
				closed++
				if err != nil {
					t.Errorf("%.60s: closed with %v", result, err)
				}
			})
			s.finish(&BodyAnswer{ID: 7, Result: res, Modern: modern, Self: SelfJSON(testSelf)})
			if closed != 1 {
				t.Errorf("%.60s: OnClose ran %d times", result, closed)
			}
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
			if res.IsError != peek.IsError || res.ResultType != peek.ResultType || string(res.Meta) != string(peek.Meta) || res.Size == 0 {
				t.Errorf("%.60s: facts %+v, want %+v", result, res, peek)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		}
	}
}

// After a notification the answer is the stream's last event, on one line.
func TestBodyOnStream(t *testing.T) {
	s, rec, _ := passCall(false)
	if err := s.Notify("notifications/progress", map[string]any{"progress": 1}); err != nil {
		t.Fatal(err)
	}
	body := "{\"id\":\"pgw-call-2\",\"jsonrpc\":\"2.0\",\"result\":{\"content\":\n[{\"type\":\"text\",\"text\":\"x\"}]}}"
	res, _, _, err := streamedResult(strings.NewReader(body), "pgw-call-2", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.finish(&BodyAnswer{ID: 7, Result: res})
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

// What openBody refuses before the result is an error; an answer without
// a result comes back whole to be read as any.
func TestBodyBeforeResult(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":"other","result":{}}`, "not the answer to request pgw-call-1"},
		{`{"jsonrpc":"2.0","method":"ping","result":{}}`, "a request where the answer was expected"},
		{`{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"result":{}}`, "both an error and a result"},
		{`{"jsonrpc":"2.0","id":"pgw-call-1","result":[1]}`, "the result is not an object"},
		{`[]`, "invalid character '['"},
		{`{"jsonrpc":"2.0","id":"pgw-call-1"`, "unexpected end of JSON input"},
	} {
		_, _, _, err := streamedResult(strings.NewReader(c.body), "pgw-call-1", 1<<20)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrAnswerBroken) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
	errAnswer := `{"jsonrpc":"2.0","id":"pgw-call-1","error":{"code":-32602,"message":"no"}}`
	_, msg, _, err := streamedResult(strings.NewReader(errAnswer), "pgw-call-1", 1<<20)
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

// An answer that breaks after the copy began aborts the caller's response:
// its client sees a failed response, not a short one; OnClose's functions
// get the error.
func TestBodyBroken(t *testing.T) {
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
		s, _, _ := passCall(false)
		res, _, aborted, err := streamedResult(c.body, "pgw-call-1", 1000)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var closeErr error
		res.OnClose(func(err error) { closeErr = err })
		func() {
			defer func() {
				if p := recover(); p != http.ErrAbortHandler {
					t.Errorf("%s: finish: panic %v, want http.ErrAbortHandler", c.name, p)
				}
			}()
			s.finish(&BodyAnswer{ID: 7, Result: res})
		}()
		if !errors.Is(closeErr, ErrAnswerBroken) || *aborted == 0 {
			t.Errorf("%s: closed with %v (aborted %d), want ErrAnswerBroken", c.name, closeErr, *aborted)
		}
	}
}

// Off, or outside a fast call, nothing streams. A streamed result that is
// not copied is released: closed, when the caller's request has ended,
// its context, or held whole.
func TestBodyNotCopied(t *testing.T) {
	if (&Call{}).Streams() || (*Call)(nil).Streams() {
		t.Error("streams without a fast call")
	}
	func() {
		defer SetFast(true)
		SetFast(false)
		if (&Call{stream: &Stream{}}).Streams() {
			t.Error("streams with the switch off")
		}
	}()
	body := `{"jsonrpc":"2.0","id":"c","result":{"isError":true, "content":[]}}`
	open := func(t *testing.T) (*RawResult, *int, *error) {
		res, _, aborted, err := streamedResult(strings.NewReader(body), "c", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var closeErr error
		res.OnClose(func(err error) { closeErr = err })
		return res, aborted, &closeErr
	}
	t.Run("closed", func(t *testing.T) {
		res, aborted, closeErr := open(t)
		res.Close()
		res.Close()
		if !errors.Is(*closeErr, errBodyUnread) || *aborted != 1 {
			t.Errorf("closed with %v, aborted %d", *closeErr, *aborted)
		}
	})
	t.Run("caller gone", func(t *testing.T) {
		res, aborted, closeErr := open(t)
		rec := httptest.NewRecorder()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s := newStream(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx))
		s.id = 7
		s.finish(&BodyAnswer{ID: 7, Result: res})
		if !errors.Is(*closeErr, errBodyUnread) || *aborted != 1 || rec.Body.Len() != 0 {
			t.Errorf("closed with %v, aborted %d, written %q", *closeErr, *aborted, rec.Body.String())
		}
	})
	t.Run("held", func(t *testing.T) {
		res, aborted, closeErr := open(t)
		ans := (&BodyAnswer{ID: 7, Result: res}).Held()
		if res.Streamed() || string(res.JSON) != `{"content":[],"isError":true}` || !res.IsError || *closeErr != nil || *aborted != 1 {
			t.Errorf("%+v, closed with %v, aborted %d", res, *closeErr, *aborted)
		}
		if raw, ok := ans.(RawAnswer); !ok || string(raw) != `{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}` {
			t.Errorf("answer %v", ans)
		}
	})
}

// A client call that may stream gets a large JSON answer as a streamed
// result, which its copy reads from the response body; the end of the
// call's context closes one nobody copies, so that its connection and its
// OnClose functions are not left waiting.
func TestClientCallStreams(t *testing.T) {
	blob := strings.Repeat("x", 3*StreamAbove)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"`+blob+`"}]}}`)
	}))
	t.Cleanup(ts.Close)
	call := func(ctx context.Context) *RawResult {
		ctx, cancel := context.WithCancel(ctx)
		cc := &ClientCall{URL: ts.URL, Transport: ts.Client().Transport, ID: "c1", Limit: 64 << 20, Stream: true,
			Debug: func(string, error) {}}
		res, err := cc.Do(ctx, cancel, []byte(`{}`))
		if err != nil || !res.Streamed() {
			t.Fatalf("Do: %+v, %v", res, err)
		}
		return res
	}
	t.Run("copied", func(t *testing.T) {
		res := call(context.Background())
		s, rec, _ := passCall(false)
		s.finish(&BodyAnswer{ID: 7, Result: res})
		if !strings.Contains(rec.Body.String(), blob) || res.Size < len(blob) {
			t.Errorf("copied %d bytes, size %d", rec.Body.Len(), res.Size)
		}
	})
	t.Run("context ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		res := call(ctx)
		closed := make(chan error, 1)
		res.OnClose(func(err error) { closed <- err })
		cancel()
		if err := <-closed; !errors.Is(err, errBodyUnread) {
			t.Errorf("closed with %v", err)
		}
	})
}
