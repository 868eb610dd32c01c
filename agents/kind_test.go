package agents_test

import (
	"slices"
	"testing"

	"github.com/pallasgw/pallasgw/agents"
)

// Register refuses what would make a kind ambiguous or unbuildable: a
// second factory for a name, an empty name, a nil factory.
func TestRegisterRefuses(t *testing.T) {
	factory := func(agents.Host) (agents.Kind, error) { return nil, nil }
	agents.Register("test-once", factory)
	if !slices.Contains(agents.Kinds(), "test-once") {
		t.Fatalf("registered kinds %v lack test-once", agents.Kinds())
	}
	for _, tc := range []struct {
		name    string
		kind    string
		factory agents.Factory
	}{
		{"twice", "test-once", factory},
		{"empty kind", "", factory},
		{"nil factory", "test-nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", tc.kind)
				}
			}()
			agents.Register(tc.kind, tc.factory)
		})
	}
}
