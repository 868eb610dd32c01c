package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// What a target is handed in wire.Call.Rounds: its asks are keyed under
// the scope it narrows them to, a fresh checkpoint forgets the answers
// given so far, the resume is taken once, and an ask still waiting counts
// as unanswered.
func TestRound(t *testing.T) {
	c := &inputCall{caps: capSet{elicitation: true}, wake: make(chan struct{}, 1), resume: json.RawMessage(`{"iter":2}`)}
	var r wire.Rounds = round{c: c}

	if got := r.TakeResume(); string(got) != `{"iter":2}` || r.TakeResume() != nil {
		t.Errorf("TakeResume: %s, then %s; want the checkpoint once", got, r.TakeResume())
	}

	done := make(chan json.RawMessage)
	go func() {
		res, err := r.Scoped("tool2-").Ask(context.Background(), "elicitation/create", json.RawMessage(`{"message":"?"}`))
		if err != nil {
			t.Errorf("Ask: %v", err)
		}
		done <- res
	}()
	<-c.wake
	c.mu.Lock()
	if len(c.asks) != 1 || c.asks[0].key != "tool2-elicitation-1" {
		t.Fatalf("asks %+v, want one keyed tool2-elicitation-1", c.asks)
	}
	a := c.asks[0]
	c.mu.Unlock()
	if !r.Unanswered() {
		t.Error("an ask still waiting is not counted unanswered")
	}
	c.mu.Lock()
	c.asks = nil
	c.prior = map[string]askedInput{a.key: {M: a.method, D: a.digest, R: json.RawMessage(`{"action":"accept"}`)}}
	c.mu.Unlock()
	a.answer <- json.RawMessage(`{"action":"accept"}`)
	if res := <-done; string(res) != `{"action":"accept"}` {
		t.Errorf("Ask answered %s", res)
	}

	if !r.SetCheckpoint(true, func() json.RawMessage { return json.RawMessage(`{}`) }) {
		t.Fatal("SetCheckpoint of a bridged call reports false")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checkpoint == nil || c.prior != nil || c.seq != nil {
		t.Errorf("a fresh checkpoint kept the answers so far: prior %v, seq %v", c.prior, c.seq)
	}
}
