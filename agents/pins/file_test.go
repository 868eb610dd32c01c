package pins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustDef(t testing.TB, raw string) Def {
	t.Helper()
	d, err := Definition([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFileRoundTrip(t *testing.T) {
	f := &File{}
	a := mustDef(t, `{"name":"search","description":"Search the web.\nLine two.","inputSchema":{"type":"object"}}`)
	b := mustDef(t, `{"name":"fetch","description":"Fetch <b>a</b> page","inputSchema":{"type":"object"}}`)
	f.Approve("argos", a)
	f.Approve("files", b)
	f.Reject("files", "fetch", mustDef(t, `{"name":"fetch","description":"other"}`).Hash)
	f.Reject("files", "evil", mustDef(t, `{"name":"evil"}`).Hash)
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse("pins.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if e := g.Lookup("argos", "search"); e == nil || e.Hash != a.Hash || string(e.Definition) != string(a.Canonical) {
		t.Fatalf("argos/search: %+v\n%s", e, out)
	}
	if e := g.Lookup("files", "fetch"); e == nil || e.Hash != b.Hash || len(e.Rejected) != 1 {
		t.Fatalf("files/fetch: %+v", e)
	}
	if e := g.Lookup("files", "evil"); e == nil || e.Hash != "" || len(e.Rejected) != 1 {
		t.Fatalf("files/evil: %+v", e)
	}
	again, _ := g.Marshal()
	if string(again) != string(out) {
		t.Fatalf("not stable:\n%s\n---\n%s", out, again)
	}
}

func TestParseBad(t *testing.T) {
	good := mustDef(t, `{"name":"search","description":"x"}`)
	cases := []struct{ name, yaml, want string }{
		{"unknown top key", "tools: {}\n", "pins.yaml:1: tools: unknown key"},
		{"unknown entry key", "servers:\n  a:\n    search:\n      hash: " + good.Hash + "\n      definition: '" + string(good.Canonical) + "'\n      by: me\n", "pins.yaml:6: servers.a.search.by: unknown key"},
		{"bad hash", "servers:\n  a:\n    search:\n      hash: sha256:xyz\n      definition: '{}'\n", "pins.yaml:4: servers.a.search.hash: want sha256:"},
		{"hash does not match", "servers:\n  a:\n    search:\n      hash: sha256:" + strings.Repeat("0", 64) + "\n      definition: '" + string(good.Canonical) + "'\n", "servers.a.search.hash: does not match the definition"},
		{"definition of another tool", "servers:\n  a:\n    other:\n      hash: " + good.Hash + "\n      definition: '" + string(good.Canonical) + "'\n", `names tool "search"`},
		{"empty entry", "servers:\n  a:\n    search: {}\n", "needs a hash (approved) or rejected hashes"},
		{"hash without definition", "servers:\n  a:\n    search:\n      hash: " + good.Hash + "\n", "needs its definition"},
		{"not yaml", "servers: [\n", "pins.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("pins.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "pins.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "pallasgw pins init") {
		t.Fatalf("err = %v", err)
	}
}

// Writers from many goroutines (and, through the lock file, processes)
// each add a pin: none is lost, and the file always parses.
func TestUpdateSerialised(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.yaml")
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := mustDef(t, fmt.Sprintf(`{"name":"t%d","description":"tool %d"}`, i, i))
			errs <- Update(path, func(f *File) error { f.Approve("s", d); return nil })
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.Servers["s"]); got != n {
		t.Fatalf("%d pins, want %d", got, n)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".pins.yaml.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// Nothing but the pins file: no lock file beside it either.
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files beside the pins file after the writes: %v", names)
	}
}

func TestUpdateKeepsBrokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(path, []byte("servers: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Update(path, func(f *File) error { return nil })
	if err == nil {
		t.Fatal("a broken file was rewritten")
	}
	if b, _ := os.ReadFile(path); string(b) != "servers: [\n" {
		t.Fatalf("file changed: %q", b)
	}
}

func TestWritable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pins.yaml")
	if err := Writable(path); err != nil {
		t.Fatalf("writable dir: %v", err)
	}
	if err := os.Symlink("..data/pins.yaml", path); err != nil {
		t.Fatal(err)
	}
	if err := Writable(path); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlink: %v", err)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		if err := Writable(filepath.Join(ro, "pins.yaml")); err == nil {
			t.Fatal("read-only dir reported writable")
		}
	}
}
