package mcpclient

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCloseCancelsCallsBeforeSessions: a manager that closes with a call in
// flight tells the downstream the call was cancelled before it ends the
// session. (A Go SDK server closing a session waits for its running
// handlers; one blocked on the gateway, an elicitation the gateway will
// never answer, held the DELETE, and the server, forever.)
func TestCloseCancelsCallsBeforeSessions(t *testing.T) {
	for _, typed := range []bool{false, true} {
		name := map[bool]string{false: "raw", true: "typed"}[typed]
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			note := func(s string) {
				mu.Lock()
				seen = append(seen, s)
				mu.Unlock()
			}
			started := make(chan struct{}, 1)
			d := &scriptServer{replies: make(chan json.RawMessage, 8), call: func(w http.ResponseWriter, id, params json.RawMessage) {
				sseEvent(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`)
				started <- struct{}{}
				time.Sleep(300 * time.Millisecond) // a tool that runs on until it hears otherwise
			}}
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodDelete {
					note("DELETE")
					w.WriteHeader(http.StatusOK)
					return
				}
				body, _ := io.ReadAll(r.Body)
				if strings.Contains(string(body), `"notifications/cancelled"`) {
					note("cancelled")
				}
				r.Body = io.NopCloser(strings.NewReader(string(body)))
				d.serve(w, r)
			}))
			t.Cleanup(ts.Close)
			m := NewManager([]ServerSpec{{Name: "script", URL: ts.URL}}, Options{})
			done := make(chan error, 1)
			go func() {
				var err error
				if typed {
					_, err = m.CallTool(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
				} else {
					_, err = m.CallToolRaw(testCtx(t), "script", "t", nil, nil, nil, CallOptions{})
				}
				done <- err
			}()
			<-started
			_ = m.Close()
			if err := <-done; err == nil {
				t.Fatal("the call ended without an error when its manager closed")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 2 || seen[0] != "cancelled" || seen[len(seen)-1] != "DELETE" {
				t.Errorf("the downstream saw %v, want notifications/cancelled, then the DELETE", seen)
			}
		})
	}
}
