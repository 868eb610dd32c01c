package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Check is an extra validation step supplied by a package that knows rules
// config must not import (for example the policy blocklist). It reports each
// problem through report with the key path it concerns.
type Check func(c *Config, report func(path []string, msg string))

// Load reads, expands, decodes, defaults and validates the config at path.
// Any problem is returned as *Errors listing every finding; the file is never
// half-loaded.
func Load(path string, checks ...Check) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &Errors{List: []Error{{File: path, Msg: err.Error()}}}
	}
	return Parse(path, raw, checks...)
}

// Parse is Load for bytes already read from path.
func Parse(path string, raw []byte, checks ...Check) (*Config, error) {
	p := &parser{file: path, errs: &Errors{}, cards: map[string]card{}}
	c := p.parse(raw)
	if c == nil {
		p.scrub(nil)
		p.errs.sort()
		p.errs.Refs = Refs{EnvFile: p.envPath}
		return nil, p.errs
	}
	// Unknown keys and values of the wrong type (reported, and left at
	// their defaults) do not stop the checks below: every problem of the
	// file is reported at once, with the warnings.
	p.applyDefaults(c)
	p.noteExpanded(c)
	p.validate(c)
	p.warnEmptyCredentials(c)
	for _, check := range checks {
		check(c, func(path []string, msg string) { p.addPath(path, msg) })
	}
	p.scrub(c)
	if len(p.errs.List) > 0 {
		p.errs.sort()
		p.errs.Warnings, p.errs.Infos = c.Warnings, c.Infos
		p.errs.Refs = c.Refs()
		return nil, p.errs
	}
	return c, nil
}

type parser struct {
	file string
	root *yaml.Node // the document's top mapping
	errs *Errors
	env  map[string]string // from env_file; the process environment wins
	// envPath is the env_file read (or the optional .env), once known.
	envPath string
	// cards are the agents loaded from agent cards, by name: their
	// problems are reported against the card's file.
	cards map[string]card
	// expansions are the ${VAR}s expanded, for scrub.
	expansions []expansion
	// line is the line being expanded; empty the variables that expanded
	// to "" by line (warnEmptyCredentials).
	line  int
	empty map[int][]string
}

func (p *parser) add(line int, key, msg string) {
	key = safeKey(key)
	if p.errs.covered(key) {
		return
	}
	p.errs.List = append(p.errs.List, Error{File: p.file, Line: line, Key: key, Msg: msg})
}

// addPath reports a problem at the line of the deepest existing key of
// path, in the agent card for an agent that came from one.
func (p *parser) addPath(path []string, msg string) {
	if c, ok := p.cardOf(path); ok {
		line := 1 // the card's opening "---"
		if len(path) > 2 {
			line = lineOf(c.root, path[2:])
		}
		if key := keyName(path); !p.errs.covered(key) {
			p.errs.List = append(p.errs.List, Error{File: c.file, Line: line, Key: key, Msg: msg})
		}
		return
	}
	p.add(lineOf(p.root, path), keyName(path), msg)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func (p *parser) parse(raw []byte) *Config {
	hash := sha256.New()
	hash.Write(raw)
	envPath, envLine := p.envFilePath(raw)
	optional := envPath == ""
	if optional {
		// No env_file: a .env beside the config is read when present (and
		// watched, so that creating one reloads).
		envPath = filepath.Join(filepath.Dir(p.file), ".env")
	}
	p.envPath = envPath
	data, err := os.ReadFile(envPath)
	switch {
	case err == nil:
		hash.Write(data)
		p.env = parseEnvFile(data)
	case !optional || !errors.Is(err, fs.ErrNotExist):
		p.add(envLine, "env_file", err.Error())
		return nil
	}
	expanded := p.expandText(raw)
	if len(p.errs.List) > 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(expanded, &doc); err != nil {
		p.syntaxError(expanded, err)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.add(1, "", "config must be a YAML mapping")
		return nil
	}
	p.root = doc.Content[0]
	checkKnownKeys(p, p.root, typeOfConfig, nil) // reported; decoding ignores them
	c := &Config{}
	if err := p.root.Decode(c); err != nil {
		p.yamlError(err)
		return nil
	}
	p.loadCards(c, hash)
	p.hashPins(c, hash)
	c.File = p.file
	c.pos = &positions{root: p.root, cards: p.cards}
	c.Hash = hex.EncodeToString(hash.Sum(nil))
	c.EnvFilePath = envPath
	return c
}

// hashPins resolves the pins file against the config's directory and adds
// its bytes to the config's hash, so that editing it reloads (and an
// unchanged one is a no-op). Parsing it is the gateway's: a missing or
// broken file fails the load there, with the file's own line numbers.
func (p *parser) hashPins(c *Config, hash io.Writer) {
	if c.Pins == "" {
		return
	}
	c.PinsPath = c.Pins
	if !filepath.IsAbs(c.PinsPath) {
		c.PinsPath = filepath.Join(filepath.Dir(p.file), c.PinsPath)
	}
	if abs, err := filepath.Abs(c.PinsPath); err == nil {
		c.PinsPath = abs
	}
	hash.Write([]byte("\x00pins\x00"))
	if b, err := os.ReadFile(c.PinsPath); err == nil {
		hash.Write(b)
	}
}

func (p *parser) yamlError(err error) {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		if sub := yamlLine.FindStringSubmatch(strings.TrimSpace(m)); sub != nil {
			n, _ := strconv.Atoi(sub[1])
			p.add(n, keyOnLine(p.root, n), decodeWords(hideValues(sub[2])))
			continue
		}
		p.add(0, "", decodeWords(hideValues(strings.TrimPrefix(m, "yaml: "))))
	}
}

// unmarshalMsg is yaml.v3's message for a value its field cannot take.
var unmarshalMsg = regexp.MustCompile(`^cannot unmarshal !!(\w+)(?: \(value not shown\))? into (\S+)$`)

// decodeWords says a yaml.v3 type error in the words checkKnownKeys uses
// ("must be a list, not text"); other messages stay as they are.
func decodeWords(msg string) string {
	m := unmarshalMsg.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	got := map[string]string{"str": "text", "int": "a number", "float": "a number", "bool": "a boolean", "map": "a mapping",
		"seq": "a list", "null": "empty", "binary": "binary data", "timestamp": "a timestamp"}[m[1]]
	if got == "" {
		got = "a value of type " + m[1]
	}
	want := "a mapping"
	switch t := m[2]; {
	case strings.HasPrefix(t, "[]"):
		want = "a list"
	case strings.HasPrefix(t, "map["):
		want = "a mapping"
	case t == "string" || t == "config.Secret":
		want = "text"
	case t == "bool":
		want = "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") || t == "time.Duration":
		want = "a whole number"
	case strings.HasPrefix(t, "float"):
		want = "a number"
	}
	return "must be " + want + ", not " + got
}

// yamlValue is what yaml.v3 quotes of the input in its messages: a value
// ("cannot unmarshal !!str `hunter2` into ..."), an anchor name ("unknown
// anchor 'x' referenced"), a tag of the document's own ("!x"; the "!!str"
// kind is yaml's). Its syntax errors quote yaml's own characters
// ("did not find expected ',' or ']'"), which stay.
var yamlValue = regexp.MustCompile("`[^`]*`|(anchor )'[^']*'|(^|[\\s(])![^!\\s][^\\s]*")

// hideValues takes the input's text out of a yaml.v3 message. The file is
// read after ${VAR} expansion, so the text may be a secret from the
// environment, and the message goes to validate's output, the log and
// /-/status; the line number and the types say where and what is wrong.
func hideValues(msg string) string {
	return yamlValue.ReplaceAllString(msg, "${1}${2}(value not shown)")
}

var envFileRE = regexp.MustCompile(`(?m)^env_file:[ \t]*(.*?)[ \t]*(?:#.*)?$`)

// envFilePath finds the top-level env_file in the raw text (it must be known
// before the rest of the file is expanded), expands it from the process
// environment and resolves it against the config's directory.
func (p *parser) envFilePath(raw []byte) (string, int) {
	loc := envFileRE.FindSubmatchIndex(raw)
	if loc == nil {
		return "", 0
	}
	line := bytes.Count(raw[:loc[0]], []byte("\n")) + 1
	v := strings.Trim(string(raw[loc[2]:loc[3]]), `"'`)
	if exp, err := p.expandString(v); err == nil {
		v = exp
	}
	if v == "" {
		return "", 0
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(filepath.Dir(p.file), v)
	}
	return v, line
}

// parseEnvFile reads KEY=VALUE lines; "#" comments, blank lines, an optional
// "export " prefix and single or double quotes around the value are allowed.
func parseEnvFile(data []byte) map[string]string {
	env := map[string]string{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return env
}

// lookup walks mapping keys; it returns the value node or nil.
func lookup(n *yaml.Node, path []string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// keyOnLine is the dotted path of the deepest mapping key on line of the
// tree under root ("" when none): the key a yaml.v3 decoding error of that
// line is about.
func keyOnLine(root *yaml.Node, line int) string {
	var found []string
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				kp := append(slices.Clone(path), n.Content[i].Value)
				if n.Content[i].Line == line || n.Content[i+1].Line == line {
					found = kp
				}
				walk(n.Content[i+1], kp)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, append(slices.Clone(path), strconv.Itoa(i)))
			}
		}
	}
	if root != nil {
		walk(root, nil)
	}
	return keyName(found)
}

// lineOf returns the line of the deepest key of path present in the tree.
func lineOf(root *yaml.Node, path []string) int {
	line, n := 1, root
	if root == nil {
		return 0
	}
	for _, key := range path {
		if n.Kind == yaml.SequenceNode {
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
