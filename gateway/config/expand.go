package config

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// expandText replaces ${VAR} and ${VAR:-default} in the raw file, line by
// line, before YAML decoding (so that flow mappings such as
// "{X-Api-Key: ${KEY}}" work). Comments are left alone. "$${" is a literal
// "${". An unset variable without a default is an error naming it.
func (p *parser) expandText(raw []byte) []byte {
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		code, comment := splitComment(line)
		if !strings.Contains(code, "$") {
			continue
		}
		p.line = i + 1
		v, err := p.expandString(code)
		if err != nil {
			p.add(i+1, "", err.Error())
			continue
		}
		lines[i] = v + comment
	}
	return []byte(strings.Join(lines, "\n"))
}

// splitComment splits a YAML line at the start of its comment: a '#' at the
// start or after whitespace, outside quotes.
func splitComment(line string) (code, comment string) {
	var quote byte
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			if i == 0 || strings.ContainsRune(" \t:{[,-", rune(line[i-1])) {
				quote = ch
			}
		case ch == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], line[i:]
		}
	}
	return line, ""
}

func (p *parser) getenv(name string) (string, bool) {
	if v, ok := os.LookupEnv(name); ok {
		return v, true
	}
	v, ok := p.env[name]
	return v, ok
}

func (p *parser) expandString(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "$")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$${"):
			b.WriteString("${")
			s = s[3:]
		case strings.HasPrefix(s, "${"):
			end := strings.Index(s, "}")
			if end < 0 {
				return "", fmt.Errorf("unterminated ${ in value")
			}
			expr := s[2:end]
			s = s[end+1:]
			name, def, hasDef := strings.Cut(expr, ":-")
			if !validEnvName(name) {
				return "", fmt.Errorf("invalid variable reference ${%s}", expr)
			}
			v, ok := p.getenv(name)
			switch {
			case ok && (v != "" || !hasDef):
				b.WriteString(v)
				p.expansions = append(p.expansions, expansion{value: v, text: "${" + expr + "}"})
				if v == "" {
					p.noteEmpty(name)
				}
			case hasDef:
				b.WriteString(def)
				if def == "" {
					p.noteEmpty(name)
				}
			default:
				return "", fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
			}
		default:
			b.WriteString("$")
			s = s[1:]
		}
	}
}

// noteEmpty records that variable name expanded to "" on the line being
// expanded (emptyVarsAt reads it).
func (p *parser) noteEmpty(name string) {
	if p.empty == nil {
		p.empty = map[int][]string{}
	}
	p.empty[p.line] = append(p.empty[p.line], name)
}

// expansion is one variable's value as expanded and the text it replaced.
type expansion struct{ value, text string }

// minScrubbed is the shortest expanded value scrub replaces: shorter ones
// (a port, "true") are no secret, and would be found inside other words.
const minScrubbed = 4

// scrub replaces every expanded value in the errors and warnings with the
// text written in the file (${OPENAI_API_KEY}): a typo such as a missing
// space after "api_key:" puts the expanded secret into a key path or a
// message, and errors reach validate, the log, POST /-/reload and
// /-/status. Longest values first, so none is left half replaced.
func (p *parser) scrub(c *Config) {
	if len(p.expansions) == 0 {
		return
	}
	sort.SliceStable(p.expansions, func(i, j int) bool { return len(p.expansions[i].value) > len(p.expansions[j].value) })
	var pairs []string
	for _, e := range p.expansions {
		if len(e.value) >= minScrubbed {
			pairs = append(pairs, e.value, e.text)
		}
	}
	r := strings.NewReplacer(pairs...)
	for i := range p.errs.List {
		p.errs.List[i].Key = r.Replace(p.errs.List[i].Key)
		p.errs.List[i].Msg = r.Replace(p.errs.List[i].Msg)
	}
	if c != nil {
		for i, w := range c.Warnings {
			c.Warnings[i] = r.Replace(w)
		}
		for i, w := range c.Infos {
			c.Infos[i] = r.Replace(w)
		}
	}
}

// noteExpanded records in each server the expanded values that its
// fields hold (Server.Expanded). The text is expanded before it is
// decoded, so a value is found by where it ended up: in a field, whole or
// as part of it ("--token=${T}", "https://${HOST}/mcp").
func (p *parser) noteExpanded(c *Config) {
	var values []string
	for _, e := range p.expansions {
		if len(e.value) >= minScrubbed && !slices.Contains(values, e.value) {
			values = append(values, e.value)
		}
	}
	if len(values) == 0 || c == nil {
		return
	}
	slices.Sort(values)
	for _, s := range c.MCP.Servers {
		if s == nil {
			continue
		}
		fields := append([]string{s.URL, s.Command, s.Dir}, s.Args...)
		for _, v := range s.Env {
			fields = append(fields, v.Value())
		}
		for _, v := range s.Headers {
			fields = append(fields, v.Value())
		}
		for _, v := range values {
			if slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(f, v) }) {
				s.expanded = append(s.expanded, v)
			}
		}
	}
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return true
}

var (
	typeOfConfig   = reflect.TypeOf(Config{})
	typeOfDuration = reflect.TypeOf(time.Duration(0))
)

// checkKnownKeys reports mapping keys that have no field in t (strict
// decoding with line numbers: yaml.v3's KnownFields does not apply to
// Node.Decode), and every value that cannot be decoded into its field,
// in the project's words. A value of the wrong type is then taken out of
// the tree (wrongType), so that decoding goes on and the rest of the file
// is checked: each problem is reported once, and one does not hide others.
func checkKnownKeys(p *parser, n *yaml.Node, t reflect.Type, path []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOfDuration {
		checkDuration(p, n, path)
		return
	}
	if checkScalar(p, n, t, path) {
		return
	}
	switch t.Kind() {
	case reflect.String:
		if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
			p.wrongType(n, path, "must be text, not "+kindName(n))
		}
	case reflect.Struct:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" && reflect.PointerTo(t).Implements(typeOfBoolShorthand) {
			return // toolsearch.go
		}
		if n.Kind != yaml.MappingNode {
			notA(p, n, path, "a mapping")
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			kp := append(append([]string{}, path...), k.Value)
			if !ok {
				p.unknownKey(k, path, fields)
				continue
			}
			checkKnownKeys(p, n.Content[i+1], ft, kp)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			notA(p, n, path, "a mapping")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode {
				p.wrongType(n, path, "keys must be names, not "+kindName(k))
				return
			}
			kp := append(append([]string{}, path...), n.Content[i].Value)
			checkKnownKeys(p, n.Content[i+1], t.Elem(), kp)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			notA(p, n, path, "a list")
			return
		}
		for i, c := range n.Content {
			checkKnownKeys(p, c, t.Elem(), append(append([]string{}, path...), fmt.Sprint(i)))
		}
	}
}

// unknownKey reports the key k of the mapping at path that no field (of
// fields) takes.
func (p *parser) unknownKey(k *yaml.Node, path []string, fields map[string]reflect.Type) {
	name, value, fused := strings.Cut(k.Value, ":")
	if !fused {
		msg := "unknown key"
		if near := nearestKey(k.Value, fields); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		p.add(k.Line, keyName(append(append([]string{}, path...), k.Value)), msg)
		return
	}
	// "token:abc" (no space after the colon) is one key: what follows the
	// colon is the value meant, maybe a secret, and is not shown.
	msg := fmt.Sprintf("unknown key %q: a key needs a space after its colon (%s: ...)", name+":…", name)
	if value == "" {
		msg = fmt.Sprintf("unknown key %q", name+":")
	}
	p.add(k.Line, keyName(path), msg)
	if _, ok := fields[name]; ok {
		p.errs.markTyped(keyName(append(append([]string{}, path...), name))) // "is required" would repeat it
	}
}

// nearestKey is the known key closest to name when it is close enough to
// be the one meant (a typo: at most 2 edits, and fewer than half of
// name's letters; a swap of two neighbours is one edit), else "". Ties go
// to the first in sorted order.
func nearestKey(name string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if d := editDistance(strings.ToLower(name), k); d < bestD && 2*d < len(name) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b
// (Levenshtein plus transpositions of neighbours), over bytes.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// wrongType reports the value n at path that its field cannot take and
// takes it out of the tree: decoding leaves the field at its default, and
// later checks of that key (and the keys under it) stay silent, as the
// problem is reported.
func (p *parser) wrongType(n *yaml.Node, path []string, msg string) {
	key := keyName(path)
	p.add(n.Line, key, msg)
	p.errs.markTyped(key)
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || name == "" {
			continue
		}
		out[name] = f.Type
	}
	return out
}

// checkScalar reports a value that cannot be decoded into a number or a
// boolean field, with the key and what the field takes (yaml.v3 would say
// "cannot unmarshal !!str into int", with neither), and a negative number:
// no count, port, size or limit of the config is below zero. It reports
// whether t is such a field.
func checkScalar(p *parser, n *yaml.Node, t reflect.Type, path []string) bool {
	var want string
	var tags []string
	signed := false
	switch t.Kind() {
	case reflect.Bool:
		want, tags = "true or false", []string{"!!bool"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want, tags, signed = "a whole number", []string{"!!int"}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want, tags = "a whole number, 0 or more", []string{"!!int"}
	case reflect.Float32, reflect.Float64:
		want, tags = "a number", []string{"!!int", "!!float"}
	default:
		return false
	}
	switch {
	case n.Tag == "!!null":
	case !slices.Contains(tags, n.Tag):
		p.wrongType(n, path, "must be "+want+", not "+kindName(n))
	case signed && strings.HasPrefix(n.Value, "-"):
		p.wrongType(n, path, "must not be negative")
	}
	return true
}

// notA reports a node that is not the mapping or list its field takes
// (an empty value is: it leaves the default).
func notA(p *parser, n *yaml.Node, path []string, want string) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" || n.Kind == yaml.AliasNode {
		return
	}
	p.wrongType(n, path, "must be "+want+", not "+kindName(n))
}

// kindName says what a node is, without its value.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.Tag {
	case "!!str":
		return "text"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	}
	return "a value of type " + strings.TrimPrefix(n.Tag, "!!")
}

// durationWords is what a duration field takes.
const durationWords = "must be a duration (a number with a unit: 300ms, 30s, 5m, 1h), not "

// checkDuration lets "0" mean a zero duration (poll_interval: 0 = off)
// and reports other numbers without a unit clearly, and negative
// durations (no timeout or interval of the config is below zero).
func checkDuration(p *parser, n *yaml.Node, path []string) {
	switch {
	case n.Kind != yaml.ScalarNode && n.Kind != yaml.AliasNode:
		p.wrongType(n, path, durationWords+kindName(n))
	case n.Tag == "!!str":
		if d, err := time.ParseDuration(n.Value); err != nil {
			p.wrongType(n, path, "not a duration: write a number with a unit, e.g. 300ms, 30s, 5m, 1h30m")
		} else if d < 0 {
			p.wrongType(n, path, "must not be negative")
		}
	case n.Tag == "!!null" || n.Kind == yaml.AliasNode:
	case n.Tag != "!!int" && n.Tag != "!!float":
		p.wrongType(n, path, durationWords+kindName(n))
	case n.Value == "0":
		n.Value, n.Tag = "0s", "!!str"
	default:
		value := n.Value
		p.wrongType(n, path, fmt.Sprintf("duration %s needs a unit, e.g. %ss", value, value))
	}
}
