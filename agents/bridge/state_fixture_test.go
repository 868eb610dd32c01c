package bridge

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// stateFixture is testdata/requeststate-d28b184.json: requestStates, tags
// and an arguments digest made by the gateway at commit d28b184 (issue
// 41's base), under a fixed state key. A replica of this build must open
// what a replica of that one sealed (a rolling upgrade, a mixed pool):
// when the envelope, its additional data, roundState's JSON, the tag or
// the digest changes, this test fails. Do not regenerate the file with a
// newer build; add a fixture of the new format beside it instead, and keep
// this one opening for as long as the old format is accepted.
type stateFixture struct {
	Commit    string          `json:"commit"`
	Key       string          `json:"key"` // base64 state_key
	Agent     string          `json:"agent"`
	SealedAt  time.Time       `json:"sealed_at"`
	Arguments json.RawMessage `json:"arguments"` // a call's arguments, members unsorted
	Args      string          `json:"args"`      // their argsDigest
	States    []struct {
		Name   string          `json:"name"`
		Sealed string          `json:"sealed"`
		State  json.RawMessage `json:"state"` // the roundState sealed
	} `json:"states"`
	Tags []struct {
		Parts []string `json:"parts"`
		Tag   string   `json:"tag"`
	} `json:"tags"`
}

func readStateFixture(t *testing.T) *stateFixture {
	t.Helper()
	raw, err := os.ReadFile("testdata/requeststate-d28b184.json")
	if err != nil {
		t.Fatal(err)
	}
	var f stateFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.States) == 0 || len(f.Tags) == 0 {
		t.Fatalf("fixture without states or tags: %s", raw)
	}
	return &f
}

// TestStateFixtureOpens opens each state of the fixture through the
// bridge's table with its clock set to the time they were sealed: every
// one opens to the roundState sealed, for its agent only; a second past
// its expiry (the same clock moved on) it is refused as expired, as it
// is by the wall clock.
func TestStateFixtureOpens(t *testing.T) {
	f := readStateFixture(t)
	key, err := base64.StdEncoding.DecodeString(f.Key)
	if err != nil || len(key) != 32 {
		t.Fatalf("fixture key: %d bytes, %v", len(key), err)
	}
	c := NewShared(NewSealer())
	c.Sealer.SetKey(key)
	now := f.SealedAt
	c.now = func() time.Time { return now }
	for _, s := range f.States {
		t.Run(s.Name, func(t *testing.T) {
			var want roundState
			if err := json.Unmarshal(s.State, &want); err != nil {
				t.Fatal(err)
			}
			now = f.SealedAt
			got, err := c.open(s.Sealed, f.Agent)
			if err != nil {
				t.Fatalf("the state sealed at %s (%s) does not open at that time: %v", f.SealedAt, f.Commit, err)
			}
			if !reflect.DeepEqual(normalized(t, got), normalized(t, &want)) {
				t.Errorf("opened\n%+v\nwant\n%+v", got, &want)
			}
			if _, err := c.open(s.Sealed, f.Agent+"x"); !isState(err, stateInvalid) {
				t.Errorf("opened for another agent (the additional data binds it): %v", err)
			}
			now = time.Unix(want.Exp, 0).Add(time.Second)
			if _, err := c.open(s.Sealed, f.Agent); !isState(err, stateExpired) {
				t.Errorf("a second past its expiry: %v, want expired", err)
			}
			c.now = time.Now
			if _, err := c.open(s.Sealed, f.Agent); !isState(err, stateExpired) { // sealed in the past
				t.Errorf("by the wall clock: %v, want expired", err)
			}
			c.now = func() time.Time { return now }
		})
	}
}

// TestStateFixtureDigestsAndTags: the arguments digest (canonical JSON:
// members sorted) and the tags of the fixture, as d28b184 computed them.
func TestStateFixtureDigestsAndTags(t *testing.T) {
	f := readStateFixture(t)
	key, _ := base64.StdEncoding.DecodeString(f.Key)
	c := NewSealer()
	c.SetKey(key)
	var req mcp.CallToolRequest
	req.Params.RawArguments = f.Arguments
	if got := digest(rawArgs(req)); got != f.Args {
		t.Errorf("argsDigest of %s: %s, want %s", f.Arguments, got, f.Args)
	}
	for _, tg := range f.Tags {
		if got := c.Tag(tg.Parts...); got != tg.Tag {
			t.Errorf("Tag(%q) = %s, want %s", tg.Parts, got, tg.Tag)
		}
	}
}

// normalized is st as JSON decoded again: raw members compared by value.
func normalized(t *testing.T, st *roundState) any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func isState(err error, reason string) bool {
	var se *stateError
	return errors.As(err, &se) && se.reason == reason
}
