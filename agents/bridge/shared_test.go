package bridge

import (
	"fmt"
	"testing"
	"time"
)

// The parked calls: an expired call leaves the table (cancelled) when
// another is parked, past maxParked the one that expires first makes
// room, unpark takes a call once, drop takes only the call it is given,
// and CancelParked empties the table.
func TestParkedCalls(t *testing.T) {
	s := NewShared(NewSealer())
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	s.now = func() time.Time { return now }
	cancelled := map[string]bool{}
	call := func(id string, exp time.Time) *inputCall {
		return &inputCall{id: id, exp: exp, cancel: func() { cancelled[id] = true }}
	}
	size := func() int {
		s.parked.mu.Lock()
		defer s.parked.mu.Unlock()
		return len(s.parked.calls)
	}

	s.park(call("old", t0.Add(time.Minute)))
	now = t0.Add(2 * time.Minute)
	s.park(call("new", now.Add(time.Minute)))
	if !cancelled["old"] || s.unpark("old") != nil || size() != 1 {
		t.Fatalf("an expired call stays parked: cancelled %v, %d parked", cancelled, size())
	}

	for i := size(); i < maxParked; i++ {
		s.park(call(fmt.Sprint("c", i), now.Add(time.Hour+time.Duration(i)*time.Second)))
	}
	s.park(call("last", now.Add(2*time.Hour)))
	if !cancelled["new"] || size() != maxParked {
		t.Fatalf("past maxParked: cancelled %v, %d parked, want the first to expire (new) cancelled, %d parked", cancelled["new"], size(), maxParked)
	}

	last := s.unpark("last")
	if last == nil || s.unpark("last") != nil {
		t.Fatalf("unpark: %v, then again %v", last, s.unpark("last"))
	}
	s.park(last)
	s.drop(call("last", now)) // another call under the same id
	if size() != maxParked {
		t.Errorf("drop took a call it was not given")
	}
	s.drop(last)
	if size() != maxParked-1 {
		t.Errorf("drop left its call parked")
	}

	s.CancelParked()
	if size() != 0 || !cancelled["c5"] {
		t.Errorf("CancelParked: %d parked, c5 cancelled %v", size(), cancelled["c5"])
	}
}
