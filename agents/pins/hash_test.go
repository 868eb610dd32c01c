package pins

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestDefinitionCanonical(t *testing.T) {
	// RFC 8785 §3.2.3's example: members sorted by UTF-16 code units,
	// numbers in ECMAScript form, strings minimally escaped.
	a := `{"name":"t","inputSchema":{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],
		"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}}`
	d, err := Definition([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inputSchema":{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"},"name":"t"}`
	if string(d.Canonical) != want {
		t.Fatalf("canonical:\n got %s\nwant %s", d.Canonical, want)
	}
	sum := sha256.Sum256([]byte(want))
	if d.Hash != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("hash %s", d.Hash)
	}
}

func TestDefinitionStableAndSelective(t *testing.T) {
	base := `{"name":"search","description":"Search.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`
	cases := []struct {
		name string
		raw  string
		same bool
	}{
		{"reordered and spaced", `{ "inputSchema": {"properties": {"q": {"type":"string"}}, "type":"object"}, "description":"Search.", "name":"search" }`, true},
		{"_meta, icons and execution are not the definition", `{"name":"search","description":"Search.","_meta":{"at":1},"icons":[{"src":"x"}],"execution":{"taskSupport":"optional"},"inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`, true},
		{"null title is absent", `{"name":"search","title":null,"description":"Search.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`, true},
		{"description changed", strings.Replace(base, "Search.", "Search!", 1), false},
		{"schema changed", strings.Replace(base, `"string"`, `"integer"`, 1), false},
		{"annotations added", strings.Replace(base, `"name":"search"`, `"name":"search","annotations":{"readOnlyHint":true}`, 1), false},
		{"output schema added", strings.Replace(base, `"name":"search"`, `"name":"search","outputSchema":{"type":"object"}`, 1), false},
	}
	b, err := Definition([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Definition([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if (d.Hash == b.Hash) != tc.same {
				t.Fatalf("same hash = %v, want %v\n%s\n%s", d.Hash == b.Hash, tc.same, d.Canonical, b.Canonical)
			}
		})
	}
}

func TestDefinitionErrors(t *testing.T) {
	for _, raw := range []string{`[]`, `{"description":"no name"}`, `{"name":""}`, `{"name":"x","inputSchema":{"a":1,"a":2}}`} {
		if _, err := Definition([]byte(raw)); err == nil {
			t.Errorf("%s: no error", raw)
		}
	}
}

func TestDiff(t *testing.T) {
	old := mustDef(t, `{"name":"s","description":"a","inputSchema":{"type":"object"}}`).Canonical
	new := mustDef(t, `{"name":"s","description":"b","inputSchema":{"type":"object"}}`).Canonical
	var got []string
	for _, l := range Diff(old, new) {
		got = append(got, string(l.Op)+l.Text)
	}
	want := []string{" {", `-  "description": "a",`, `+  "description": "b",`, `   "inputSchema": {`, `     "type": "object"`, "   },", `   "name": "s"`, " }"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("diff:\n%s", strings.Join(got, "\n"))
	}
	for _, l := range Diff(nil, new) {
		if l.Op != Add {
			t.Fatalf("a new tool's diff has %q", l.Op)
		}
	}
}
