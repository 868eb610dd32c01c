package endpoint

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/sessions"
	"github.com/pallasgw/pallasgw/agents/wire"
)

func postAnswer(c *CallerRequests, session, id, body string) int {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Mcp-Session-Id", session)
	rec := httptest.NewRecorder()
	c.take(rec, r, id, []byte(body))
	return rec.Code
}

// An answer reaches its request only from the session that was asked, and
// only once; the registry is bounded.
func TestCallerRequestsRouteAnswers(t *testing.T) {
	c := NewCallerRequests()
	id, wait, err := c.asks.expect("pgw-s-aa")
	if err != nil || !strings.HasPrefix(id, requestIDPrefix) {
		t.Fatalf("expect: %q %v", id, err)
	}
	body := `{"jsonrpc":"2.0","id":"` + id + `","result":{"model":"m"}}`
	if code := postAnswer(c, "pgw-s-bb", id, body); code != http.StatusNotFound {
		t.Errorf("answer from another session: %d, want 404", code)
	}
	if code := postAnswer(c, "pgw-s-aa", requestIDPrefix+"00", body); code != http.StatusNotFound {
		t.Errorf("answer to an unknown id: %d, want 404", code)
	}
	if code := postAnswer(c, "pgw-s-aa", id, body); code != http.StatusAccepted {
		t.Errorf("answer: %d, want 202", code)
	}
	if res, err := answerResult(<-wait); err != nil || string(res) != `{"model":"m"}` {
		t.Errorf("result %s %v", res, err)
	}
	if code := postAnswer(c, "pgw-s-aa", id, body); code != http.StatusNotFound {
		t.Errorf("second answer: %d, want 404", code)
	}

	_, err = answerResult([]byte(`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}`))
	var rpcErr *mcpclient.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != -1 || rpcErr.Message != "no" {
		t.Errorf("error answer: %v", err)
	}

	for range maxWaiting {
		if _, _, err := c.asks.expect("s"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.asks.expect("s"); err == nil {
		t.Errorf("request %d: want refused", maxWaiting+1)
	}
}

func TestSessionIDsRecordCapabilities(t *testing.T) {
	tag := NewCallerRequests().Tag
	id := sessions.NewID(tag, "a", "token:alice", "es")
	if !strings.HasPrefix(id, "pgw-es-") || !sessionDeclared(id, capSampling) || sessionDeclared(id, capRoots) {
		t.Errorf("%q", id)
	}
	for range 200 { // the seal never reads as capability letters
		if id := sessions.NewID(tag, "a", "token:alice", ""); sessionDeclared(id, capElicitation) ||
			sessionDeclared(id, capSampling) || sessionDeclared(id, capRoots) || len(id) != len("pgw-")+32+1+32 {
			t.Fatalf("%q", id)
		}
	}
	if sessionDeclared("other-e-1", capElicitation) {
		t.Error("an id not minted here declares nothing")
	}
}

// A URL-mode elicitation goes only to a session whose id records URL mode;
// an id minted before the id recorded it (pgw-e-) is form mode only.
func TestURLElicitationNeedsItsMode(t *testing.T) {
	tag := NewCallerRequests().Tag
	url := json.RawMessage(`{"mode":"url","url":"https://gw.example/connect/x","elicitationId":"x","message":"connect"}`)
	form := json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`)
	for _, c := range []struct {
		name, caps string
		params     json.RawMessage
		refused    bool
	}{
		{"URL mode declared", "eu", url, false},
		{"form mode only (an id from before)", "e", url, true},
		{"form request, form mode", "e", form, false},
		{"form request, URL mode too", "eu", form, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := &requestState{legacy: true, acceptSSE: true, sessionID: sessions.NewID(tag, "a", "token:alice", c.caps)}
			err := canRequest(rs, &StreamTracker{w: &wire.Response{}}, "elicitation/create", c.params)
			if (err != nil) != c.refused {
				t.Errorf("canRequest = %v, want refused %v", err, c.refused)
			}
		})
	}
}
