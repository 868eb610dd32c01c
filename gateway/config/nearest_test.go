package config

import (
	"reflect"
	"testing"
)

// An unknown key names the known key it is a typo of, and only then.
func TestNearestKey(t *testing.T) {
	fields := yamlFields(reflect.TypeOf(Agent{}))
	for name, want := range map[string]string{
		"modle":   "model",   // a swap
		"Model":   "model",   // case
		"timout":  "timeout", // a missing letter
		"colr":    "",        // nothing close
		"x":       "",        // too short to guess
		"serverz": "servers",
	} {
		if got := nearestKey(name, fields); got != want {
			t.Errorf("nearestKey(%q) = %q, want %q", name, got, want)
		}
	}
}
