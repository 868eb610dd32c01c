package pins

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxDiffLines bounds the line diff (quadratic); longer definitions are
// shown as all removed and all added.
const maxDiffLines = 2000

// Op is one line's part in a diff.
type Op string

// Diff operations.
const (
	Same Op = " "
	Del  Op = "-"
	Add  Op = "+"
)

// DiffLine is one line of a diff between two definitions.
type DiffLine struct {
	Op   Op     `json:"op"`
	Text string `json:"text"`
}

// Pretty indents canonical JSON for reading (two spaces); nil stays empty.
func Pretty(canonical []byte) string {
	if len(canonical) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, canonical, "", "  "); err != nil {
		return string(canonical)
	}
	return b.String()
}

// Diff compares the pretty forms of two definitions line by line (old may
// be nil: a new tool).
func Diff(old, new []byte) []DiffLine {
	a, b := lines(Pretty(old)), lines(Pretty(new))
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		var out []DiffLine
		for _, l := range a {
			out = append(out, DiffLine{Del, l})
		}
		for _, l := range b {
			out = append(out, DiffLine{Add, l})
		}
		return out
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []DiffLine
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, DiffLine{Same, a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, DiffLine{Del, a[i]})
			i++
		default:
			out = append(out, DiffLine{Add, b[j]})
			j++
		}
	}
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
