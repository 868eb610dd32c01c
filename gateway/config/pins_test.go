package config

import (
	"os"
	"path/filepath"
	"testing"
)

// The pins file is resolved beside the config and its bytes are part of
// the config's hash (an edit reloads, an unchanged file is a no-op); the
// server keys default to pins off and checks warn at 2048 characters.
func TestPinsKeys(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pallasgw.yaml")
	pins := filepath.Join(dir, "pins.yaml")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(cfgPath, "name: t\npins: pins.yaml\nmcp:\n  servers:\n    a: {url: 'http://127.0.0.1:1/mcp', pin_tools: enforce}\n"+
		"    b: {url: 'http://127.0.0.1:1/mcp', tool_checks: {max_description: 0, patterns: []}}\n")
	write(pins, "servers: {}\n")
	c1, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if c1.PinsPath != pins {
		t.Fatalf("PinsPath %q", c1.PinsPath)
	}
	a, b := c1.MCP.Servers["a"], c1.MCP.Servers["b"]
	if a.PinTools != "enforce" || a.ToolChecks.Mode != "warn" || a.ToolChecks.MaxDescription != DefaultMaxDescription || a.ToolChecks.Patterns != nil {
		t.Fatalf("a: %+v", a)
	}
	if b.PinTools != "off" || b.ToolChecks.MaxDescription != 0 || b.ToolChecks.Patterns == nil {
		t.Fatalf("b: %+v (0 and [] written stay)", b)
	}
	c2, _ := Load(cfgPath)
	if c2.Hash != c1.Hash {
		t.Fatal("hash changed without an edit")
	}
	write(pins, "servers: {a: {}}\n")
	c3, _ := Load(cfgPath)
	if c3.Hash == c1.Hash {
		t.Fatal("editing the pins file leaves the config hash")
	}
}
