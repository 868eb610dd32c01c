package wire

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// An event AppendEvent writes reads back as its message; a write that is
// not exactly one one-line message event does not.
func TestEventRoundTrip(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	ev := AppendEvent([]byte("x"), msg)[1:]
	if got, ok := EventData(ev); !ok || string(got) != string(msg) {
		t.Fatalf("EventData(%q) = %q, %v", ev, got, ok)
	}
	if !IsEvent(ev) {
		t.Error("IsEvent of an event is false")
	}
	for _, bad := range []string{"data: {}\n\n", "event: message\ndata: {}\n", "event: message\ndata: {\n}\n\n", `{"a":1}`} {
		if _, ok := EventData([]byte(bad)); ok {
			t.Errorf("EventData(%q) took it", bad)
		}
	}
}

// WriteError writes one JSON-RPC error in mcp-go's member order, data only
// when given; WriteResult one result.
func TestWriteAnswers(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, 404, json.RawMessage(`"pgw-r-1"`), -32600, "no request", nil)
	if rec.Code != 404 || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != `{"jsonrpc":"2.0","id":"pgw-r-1","error":{"code":-32600,"message":"no request"}}`+"\n" {
		t.Errorf("error answer %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if got := string(ErrorJSON(nil, -32603, "m", map[string]int{"a": 1})); got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"m","data":{"a":1}}}` {
		t.Errorf("ErrorJSON with data: %s", got)
	}
	rec = httptest.NewRecorder()
	WriteResult(rec, 7, json.RawMessage(`{"ok":true}`))
	if rec.Code != 200 || rec.Body.String() != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`+"\n" {
		t.Errorf("result answer %d %q", rec.Code, rec.Body)
	}
}
