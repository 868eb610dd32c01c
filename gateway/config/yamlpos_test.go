package config

import (
	"fmt"
	"strings"
	"testing"
)

// A YAML syntax error is reported at the problem's own line and column,
// with the key it is under, not at the line of the construct yaml.v3 was
// parsing (the top-level mapping, for a file that opens with a comment).
func TestYAMLSyntaxErrorPlace(t *testing.T) {
	// 80 lines of comment and valid config before the problem.
	var long strings.Builder
	long.WriteString("# team config\n# second comment line\nname: t\nagents:\n")
	for i := 0; long.Len() == 0 || strings.Count(long.String(), "\n") < 82; i++ {
		fmt.Fprintf(&long, "  a%d: {model: passthrough}\n", i)
	}
	cases := []struct {
		name, text string
		want       string // "line: key: message", the message's start
	}{
		{"deep, after a comment", long.String() + " b: {model: passthrough}\n",
			"83: agents.b: column 2: did not find expected key"},
		{"deep, after a flow mapping", long.String() + "  b: {model: passthrough} x: y\n",
			"83: agents.b: column 28: mapping values are not allowed"},
		{"mapping value in a plain scalar", "# c\nname: t\nagents:\n  a: {model: x}\n  b: b: c\n",
			"5: agents.b: column 7: mapping values are not allowed"},
		{"bad indentation", "# c\n\nname: t\nagents:\n  a:\n    model: x\n   bad: 1\n",
			"7: agents.a.bad: column 4: did not find expected key"},
		{"tab", "# c\nname: t\nagents:\n  a:\n\tmodel: x\n",
			"5: column 1: found character that cannot start any token"},
		{"no colon", "# c\nname: t\nlist:\n- a\n- b\nfoo\n",
			"6: column 1: could not find expected ':'"},
		{"first line", "name: t: u\n", "1: name: column 8: mapping values are not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.text))
			if err == nil {
				t.Fatal("parsed")
			}
			if got := err.Error(); !strings.HasPrefix(got, "p.yaml:"+c.want) {
				t.Errorf("got %q\nwant p.yaml:%s...", got, c.want)
			}
		})
	}
}
