package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestReadSSE(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"result":{"text":"` + strings.Repeat("x", 1<<20) + `"}}`
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n" +
		"event: message\ndata: " + big + "\n\n"
	got, err := readSSE(strings.NewReader(stream), 7)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != big {
		t.Errorf("got %d bytes, want the 1 MiB answer with id 7", len(got))
	}
	if _, err := readSSE(strings.NewReader(stream), 8); err == nil || !strings.Contains(err.Error(), "without the response") {
		t.Errorf("id 8 is not in the stream: err = %v", err)
	}
}

// Options.Header goes on every request of both styles: initialize, the
// initialized notification and each call (the JWT-on routing benchmark's
// bearer token).
func TestHeaderOnEveryRequest(t *testing.T) {
	for _, style := range []Style{Sessionless, Session} {
		t.Run(string(style), func(t *testing.T) {
			var mu sync.Mutex
			var seen, missing []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.NewDecoder(r.Body).Decode(&m)
				mu.Lock()
				seen = append(seen, m.Method)
				if r.Header.Get("Authorization") != "Bearer t0ken" {
					missing = append(missing, m.Method)
				}
				mu.Unlock()
				if m.ID == nil {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, m.ID)
			}))
			defer srv.Close()
			res, err := Run(context.Background(), Options{URL: srv.URL, Style: style, Concurrency: 1, Requests: 6, Tool: "echo",
				Header: http.Header{"Authorization": {"Bearer t0ken"}}})
			if err != nil || res.Errors > 0 {
				t.Fatalf("%v %s", err, res.FirstErr)
			}
			want := 6
			if style == Session {
				want += 2 // initialize and initialized
			}
			if len(seen) != want || len(missing) > 0 {
				t.Errorf("%d requests (%v), want %d; without the header: %v", len(seen), seen, want, missing)
			}
		})
	}
}
