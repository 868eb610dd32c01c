package wire

import (
	"errors"
	"testing"
)

// Recover turns a handler's panic into mcp-go's WithRecovery error and
// leaves a handler that returns alone.
func TestRecover(t *testing.T) {
	run := func(f func() error) (err error) {
		defer Recover("lookup", &err)
		return f()
	}
	if err := run(func() error { panic("boom") }); err == nil || err.Error() != "panic recovered in lookup tool handler: boom" {
		t.Errorf("panic: err %v", err)
	}
	want := errors.New("plain")
	if err := run(func() error { return want }); err != want {
		t.Errorf("no panic: err %v", err)
	}
}
