package config

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A YAML syntax error's place. yaml.v3 (v3.0.6, and v4.0.0-rc.2 alike)
// reports the line of the construct the parser was in when it failed (its
// context mark, 0-based: the top-level mapping of a file that opens with a
// comment is "line 1" or "line 3" for a problem on line 83) and the
// problem's own place only when there is no context. The parser does not
// export the problem mark, so locateSyntaxError finds it with the same
// parser: the problem is where the shortest prefix of the text that fails
// with the same message ends. Parsing is deterministic and reads the text
// in order, so every prefix that reaches the problem fails with it, and a
// shorter one either parses or stops at its end with another message
// (an unclosed bracket or quote fails at the end of any prefix: the
// line found is then where it was opened, which is what to fix).

// maxLocate bounds the text locateSyntaxError searches (a config is a
// few kilobytes; past this yaml's own line is reported).
const maxLocate = 4 << 20

// syntaxPlace is where a YAML syntax error is: 1-based line and column
// (0 when not found) and the dotted key path the line belongs to ("" at
// the top or when unknown).
type syntaxPlace struct {
	line, column int
	key          string
}

// locateSyntaxError finds the place of yaml.Unmarshal's syntax error msg
// (without its "yaml: line N: " prefix) in text. ok is false when it
// cannot tell.
func locateSyntaxError(text []byte, msg string) (syntaxPlace, bool) {
	if len(text) > maxLocate {
		return syntaxPlace{}, false
	}
	fails := func(prefix []byte) bool {
		var n yaml.Node
		err := yaml.Unmarshal(prefix, &n)
		if err == nil {
			return false
		}
		m := yamlLine.FindStringSubmatch(err.Error())
		return m != nil && m[2] == msg || strings.TrimPrefix(err.Error(), "yaml: ") == msg
	}
	// ends[i] is the offset just past line i+1 (its newline included).
	var ends []int
	for off := 0; off < len(text); {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			ends = append(ends, len(text))
			break
		}
		off += i + 1
		ends = append(ends, off)
	}
	if len(ends) == 0 || !fails(text) {
		return syntaxPlace{}, false
	}
	// The fewest whole lines that fail with msg (bisection: a prefix that
	// reaches the problem fails with it, see above).
	lo, hi := 0, len(ends)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(text[:ends[mid]]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	start := 0
	if lo > 0 {
		start = ends[lo-1]
	}
	line := bytes.TrimRight(text[start:ends[lo]], "\r\n")
	place := syntaxPlace{line: lo + 1, key: keyAt(text[:start], line)}
	// The column: the shortest part of the line that fails with msg. A
	// problem seen only at the line's end (the scanner looks past it)
	// leaves the column unknown.
	c0, c1 := 1, len(line)+1
	for c0 < c1 {
		mid := (c0 + c1) / 2
		if fails(text[:start+mid]) {
			c1 = mid
		} else {
			c0 = mid + 1
		}
	}
	if c0 <= len(line) {
		place.column = c0
	}
	return place, true
}

// keyAt is the dotted path of the key the broken line belongs to: the keys
// of the text before it (when that parses) that enclose the line by
// indentation, then the line's own key when it starts with one ("" when
// none is known).
func keyAt(before, line []byte) string {
	if bytes.HasPrefix(bytes.TrimLeft(line, " "), []byte("\t")) {
		return "" // a tab: YAML's indentation is unknown
	}
	indent := len(line) - len(bytes.TrimLeft(line, " ")) + 1 // the column of its first character
	var path []string
	var doc yaml.Node
	if yaml.Unmarshal(before, &doc) == nil && len(doc.Content) > 0 {
		n := doc.Content[0]
	walk:
		for {
			switch {
			case n.Kind == yaml.MappingNode && len(n.Content) >= 2 && n.Content[len(n.Content)-2].Column < indent:
				path = append(path, n.Content[len(n.Content)-2].Value)
			case n.Kind == yaml.SequenceNode && len(n.Content) > 0 && n.Column < indent:
				path = append(path, strconv.Itoa(len(n.Content)-1))
			default:
				break walk
			}
			n = n.Content[len(n.Content)-1]
		}
	}
	if m := lineKey.FindSubmatch(line); m != nil {
		path = append(path, string(m[1]))
	}
	return keyName(path)
}

// lineKey is a line's own plain mapping key ("  name: ...").
var lineKey = regexp.MustCompile(`^[ \t]*(?:- )?([A-Za-z0-9_][A-Za-z0-9_.\-]*)[ \t]*:(?:[ \t]|$)`)

// syntaxError reports yaml.Unmarshal's error err on text at the problem's
// own line, with its column and key (locateSyntaxError); other errors as
// yamlError does.
func (p *parser) syntaxError(text []byte, err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		p.yamlError(err)
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		msg = m[2]
	}
	place, ok := locateSyntaxError(text, msg)
	if !ok {
		p.yamlError(err)
		return
	}
	msg = hideValues(msg)
	if place.column > 0 {
		msg = "column " + strconv.Itoa(place.column) + ": " + msg
	}
	p.add(place.line, place.key, msg)
}
