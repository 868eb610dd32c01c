package agents

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// An injected request opens the SSE stream; mcp-go's answer, which it
// writes as JSON because it saw no notification, becomes the last event.
func TestInjectUpgradesAndReframesTheJSONAnswer(t *testing.T) {
	rec := httptest.NewRecorder()
	w, r := TrackStream(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	tw := trackerFrom(r.Context()).w
	if err := tw.inject([]byte(`{"jsonrpc":"2.0","id":"pgw-r-1","method":"roots/list"}`)); err != nil {
		t.Fatal(err)
	}
	// What mcp-go's handlePost does for a JSON answer.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"pgw-r-1\",\"method\":\"roots/list\"}\n\n" +
		"event: message\ndata: {\"id\":7,\"jsonrpc\":\"2.0\",\"result\":{}}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body\n%q\nwant\n%q", got, want)
	}
	if ct := rec.Result().Header.Get("Content-Type"); ct != "text/event-stream" { // as sent
		t.Errorf("Content-Type %q", ct)
	}
	if n := trackerFrom(r.Context()).events; n != 2 {
		t.Errorf("%d events counted, want 2", n)
	}
}

// On a stream mcp-go opened, an injected event goes between its events,
// and its own events pass unchanged; on a JSON answer nothing can be added.
func TestInjectOnAStreamAndAfterJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	w, r := TrackStream(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("event: message\ndata: {\"n\":1}\n\n"))
	if err := trackerFrom(r.Context()).w.inject([]byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("event: message\ndata: {\"n\":3}\n\n"))
	want := "event: message\ndata: {\"n\":1}\n\nevent: message\ndata: {\"n\":2}\n\nevent: message\ndata: {\"n\":3}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body %q, want %q", got, want)
	}

	rec = httptest.NewRecorder()
	w, r = TrackStream(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := trackerFrom(r.Context()).w.inject([]byte(`{}`)); err != errNotStreaming {
		t.Errorf("inject after a JSON answer began: %v, want errNotStreaming", err)
	}
}
