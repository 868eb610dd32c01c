package main

import (
	"os"
	"strings"
	"testing"
)

// The README's quickstart runs the binary make run built: `go run
// ./cmd/pallasgw chat` links it again with other flags (some 20 s with
// warm caches) where bin/pallasgw starts at once. And the way to move its
// ports is the one make run takes.
func TestQuickstartUsesTheBuiltBinary(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, quick, ok := strings.Cut(string(raw), "\n## Quickstart\n")
	if !ok {
		t.Fatal("README has no Quickstart section")
	}
	if i := strings.Index(quick, "\n## "); i >= 0 {
		quick = quick[:i]
	}
	if strings.Contains(quick, "go run ./cmd/pallasgw chat") {
		t.Error("the quickstart runs chat through go run")
	}
	for _, want := range []string{"bin/pallasgw chat pipeline -m hello", "make run LISTEN=", "ALIAS_PORT_OFFSET="} {
		if !strings.Contains(quick, want) {
			t.Errorf("the quickstart lacks %q", want)
		}
	}
}
