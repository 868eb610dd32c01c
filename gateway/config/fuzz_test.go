package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and a
// failure must always be a list of file:line messages.
func FuzzLoad(f *testing.F) {
	for _, glob := range []string{"../../configs/*.yaml", "../../configs/testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("name: x\nagents: {a: {port: ${P:-1}}}\n"))
	f.Add([]byte("name: [\n"))
	f.Add([]byte("env_file: /nonexistent\nname: x\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse("fuzz.yaml", raw)
		if err == nil {
			if c.Name == "" || c.Listen == "" {
				t.Fatalf("accepted a config without defaults: %+v", c)
			}
			return
		}
		errs, ok := err.(*Errors)
		if !ok || len(errs.List) == 0 {
			t.Fatalf("error is not a non-empty *Errors: %T %v", err, err)
		}
		for _, e := range errs.List {
			if !strings.HasPrefix(e.Error(), "fuzz.yaml") {
				t.Fatalf("message does not name the file: %q", e.Error())
			}
		}
	})
}
