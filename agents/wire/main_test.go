package wire

import (
	"os"
	"testing"
)

// TestMain runs this package's tests with the switch on whatever the
// environment says: they are tests of the hand-written paths themselves,
// and the ones that need it off turn it off (SetFast).
func TestMain(m *testing.M) {
	os.Unsetenv(EnvFast)
	SetFast(true)
	os.Exit(m.Run())
}
